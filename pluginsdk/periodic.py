"""Periodic work a long-lived process hands its backend: a contract type, so the engine runs tasks that the
serving process or `pluginsdk worker` registers without importing any interface."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from .operations import Operation

__all__ = ["Execute", "PeriodicTask"]

Execute: TypeAlias = "Callable[[Operation[Any]], Awaitable[Any]]"
"""Runs one catalog operation as the backend's administrator (what a periodic task is handed)."""


class PeriodicTask:
    """Work a long-lived process has its engine repeat (the `local` backend's `periodic=`): the REST server and
    `pluginsdk worker` register the schedulers' tasks (`pluginsdk.schedulers.periodic_tasks`), so the engine
    runs them without importing any interface.

    `run(execute)` makes one pass, running operations through `execute`; it returns the seconds until its
    next pass (None: `every`; 0: no more passes in this process). An exception is logged and the task runs
    again `every` seconds later.
    """

    __slots__ = ("every", "name", "run")

    def __init__(self, name: str, every: float, run: Callable[[Execute], Awaitable[float | None]]) -> None:
        self.name = name
        self.every = every
        self.run = run
