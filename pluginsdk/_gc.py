"""The cyclic garbage collector in a CLI run: off while a short call starts and runs, on for long ones.

A short run allocates mostly objects that live to its end (modules, classes, schemas), so collections
during start-up only walk them (~4% of a `templates list`). The console script (`pluginsdk._entry`) turns
the collector off first thing; long-lived commands (`server start`, `mcp serve`, `machines request
--wait`) turn it back on with `collect_garbage()`. Library users (`import pluginsdk`) keep Python's
default.
"""

from __future__ import annotations

import gc

__all__ = ["collect_garbage"]


def collect_garbage() -> None:
    """Turn the collector back on for a command that runs long (a no-op where it is on)."""
    if not gc.isenabled():
        gc.freeze()  # what start-up made lives to the end: keep later collections off it
        gc.enable()
