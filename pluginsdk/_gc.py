"""The cyclic garbage collector in a CLI run: off while a short call starts and runs, on for long ones.

A short run allocates mostly objects that live to its end (modules, classes, schemas), so collections
during start-up only walk them (~4% of a `templates list`). The console script (`pluginsdk._entry`) turns
the collector off first thing; long-lived commands (`server start`, `mcp serve`, `machines request
--wait`) turn it back on with `collect_garbage()`. Library users (`import pluginsdk`) keep Python's
default.
"""

from __future__ import annotations

import gc

__all__ = ["SERVER_YOUNG_THRESHOLD", "collect_garbage", "tune_for_server"]


def collect_garbage() -> None:
    """Turn the collector back on for a command that runs long (a no-op where it is on)."""
    if not gc.isenabled():
        gc.freeze()  # what start-up made lives to the end: keep later collections off it
        gc.enable()


SERVER_YOUNG_THRESHOLD = 100_000
"""Young objects a server process allocates (net of those freed) before the collector runs."""


def tune_for_server() -> None:
    """Let a request's temporaries die young: the served app's process (`pluginsdk.server.operator_app`).

    A server holds a large heap that lives as long as it does (the compiled policy and its indexes, caches)
    and serves requests that hold thousands of young objects at once (a batch of 1,000 questions and its
    answers). With Python's default (a collection every 700 net allocations) such a request is collected
    several times while its objects are alive, they are promoted, and the promotions bring on full collections
    of the whole heap: ~20 % of the server's CPU for a batch. At 100,000 a request's objects are freed by
    reference counting before any collection; cyclic garbage waits longer (bounded by that count).
    Only raised, never lowered (an operator's own setting wins).
    """
    young, middle, old = gc.get_threshold()
    if 0 < young < SERVER_YOUNG_THRESHOLD:
        gc.set_threshold(SERVER_YOUNG_THRESHOLD, middle, old)
