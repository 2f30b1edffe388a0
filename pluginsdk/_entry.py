"""The `pluginsdk` console script: the command line, minus two costs a scheduler pays on every call.

- The cyclic garbage collector is off while the CLI imports and runs: a short run allocates mostly
  objects that live to the end (modules, classes, schemas), so collections during start-up only walk
  them (~4% of a `templates list`). Long-lived commands (`server start`, `mcp serve`, `machines
  request --wait`) turn it back on with `collect_garbage()`.
- pydantic's plugin discovery scans every installed distribution's entry points at the first schema
  build (~4%). `PYDANTIC_DISABLE_PLUGINS` defaults to `__all__` here; set it (even to an empty string)
  to keep pydantic plugins in the CLI.

Library users (`import pluginsdk`) get neither: this runs only as the program.
"""

from __future__ import annotations

import gc
import os

__all__ = ["collect_garbage", "main"]


def main() -> None:
    """Console entry point."""
    gc.disable()
    if "PYDANTIC_DISABLE_PLUGINS" not in os.environ:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
        _skip_plugin_loader()
    from .cli import main as cli_main

    cli_main()


def _skip_plugin_loader() -> None:
    """Answer pydantic's plugin lookup with "none" before its loader imports `importlib.metadata`.

    With `PYDANTIC_DISABLE_PLUGINS=__all__` pydantic's `get_plugins()` returns `()` anyway, but the
    module holding it imports `importlib.metadata` (and with it `email`, `zipfile`, `csv`: ~5% of a
    `templates list`) before reading the variable. The stand-in gives the same answer without them.
    """
    import sys
    import types

    loader = types.ModuleType("pydantic.plugin._loader")
    loader.get_plugins = tuple  # type: ignore[attr-defined]
    sys.modules.setdefault(loader.__name__, loader)


def collect_garbage() -> None:
    """Turn the collector back on for a command that runs long (a no-op where it is on)."""
    if not gc.isenabled():
        gc.freeze()  # what start-up made lives to the end: keep later collections off it
        gc.enable()
