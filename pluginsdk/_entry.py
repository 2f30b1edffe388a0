"""The `pluginsdk` console script: the command line, minus two costs a scheduler pays on every call.

- The cyclic garbage collector is off while the CLI imports and runs; long-lived commands turn it back
  on (`pluginsdk._gc`).
- pydantic's plugin discovery imports `importlib.metadata` and scans every installed distribution's
  entry points at the first schema build (~4% of a `templates list`). Unless the caller sets
  `PYDANTIC_DISABLE_PLUGINS` (even to an empty string, which keeps pydantic's plugins), this process
  answers pydantic's lookup with "no plugins". `os.environ` is left as it was, so the processes the
  CLI starts see the caller's environment.

Library users (`import pluginsdk`) get neither: this runs only as the program.
"""

from __future__ import annotations

import gc
import os

__all__ = ["main"]


def main() -> None:
    """Console entry point."""
    gc.disable()  # see pluginsdk._gc
    if "PYDANTIC_DISABLE_PLUGINS" not in os.environ:
        answer_no_pydantic_plugins()
    from .cli import main as cli_main

    cli_main()


def answer_no_pydantic_plugins() -> None:
    """Answer pydantic's plugin lookup with "none" before its loader imports `importlib.metadata`.

    pydantic's `get_plugins()` lives in its private `pydantic.plugin._loader`, which imports
    `importlib.metadata` (and with it `email`, `zipfile`, `csv`: ~4% of a `templates list`, 29 M
    instructions) at the top. A stand-in module of that name with `get_plugins = tuple` gives the answer
    `PYDANTIC_DISABLE_PLUGINS=__all__` would, without the import and without exporting the variable.
    This leans on pydantic internals, so it is fenced: pydantic is capped below the next minor version in
    `pyproject.toml`, and `tests/test_dependency_fences.py` fails when the loader's shape changes.
    """
    import sys
    import types

    loader = types.ModuleType("pydantic.plugin._loader")
    loader.get_plugins = tuple  # type: ignore[attr-defined]
    sys.modules.setdefault(loader.__name__, loader)
