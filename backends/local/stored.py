"""The stored object tier 2 read for a call, handed to that call's read handler: one read, not two.

Tier 2 (`auth/objects.py`) decides an operation on one existing object on the object as stored. For a
read (GET) the handler answers with that very object instead of reading it again, so the decision and the
answer are on the same read and the call costs one statement less. What is handed over is bound to the
operation object of the call and taken once: a handler never sees an object read for another call.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["hand_over", "take"]

_held: ContextVar[tuple[object, Any] | None] = ContextVar("pluginsdk_stored_for_call", default=None)


def hand_over(op: object, stored: Any) -> None:
    """Tier 2 read `stored` for the call of `op` (and allowed it)."""
    _held.set((op, stored))


def take(op: object) -> Any | None:
    """The object tier 2 read for this call of `op`, once; None when there is none (then read it)."""
    held = _held.get()
    if held is None or held[0] is not op:
        return None
    _held.set(None)
    return held[1]
