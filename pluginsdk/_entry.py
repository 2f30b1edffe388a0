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
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from .cli import main as cli_main

    cli_main()


def collect_garbage() -> None:
    """Turn the collector back on for a command that runs long (a no-op where it is on)."""
    if not gc.isenabled():
        gc.freeze()  # what start-up made lives to the end: keep later collections off it
        gc.enable()
