"""Periodic work a long-lived process hands its backend: a contract type, so the engine runs tasks that the
serving process or `pluginsdk worker` registers without importing any interface."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .operations import Operation

__all__ = ["Execute", "PeriodicTask"]

Execute = Callable[[Operation[Any]], Awaitable[Any]]
"""Runs one catalog operation as the backend's administrator (what a periodic task is handed)."""


@dataclass(frozen=True, slots=True)
class PeriodicTask:
    """Work a long-lived process has its engine repeat (the `local` backend's `periodic=`): the REST server and
    `pluginsdk worker` register the schedulers' tasks (`pluginsdk.schedulers.periodic_tasks`), so the engine
    runs them without importing any interface.

    `run(execute)` makes one pass, running operations through `execute`; it returns the seconds until its
    next pass (None: `every`; 0: no more passes in this process). An exception is logged and the task runs
    again `every` seconds later.
    """

    name: str
    every: float
    run: Callable[[Execute], Awaitable[float | None]]
