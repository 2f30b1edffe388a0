"""What a backend is, and how one is found by name.

A backend is anything with `async execute(operation, principal) -> result` (typed: an `Operation[R]` gives
an `R`):
`local` runs the engine in-process, `remote` calls a pluginsdk server. Third
parties add backends through the `pluginsdk.backends` entry-point group.

This module is the only door from `pluginsdk` to a backend: the SDK, the server and the CLI find one by
name here (`load_backend`, `backend_class`), and reach the operator entry points of a backend that owns a
store through `StoreOperator` (`store_operator`), never by importing a backend's modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from .config import Settings
from .errors import ConfigurationError, HandlerDiscoveryError
from .operations import Operation
from .principal import Principal

__all__ = ["Backend", "Execute", "PeriodicTask", "StoreOperator", "backend_class", "load_backend", "store_operator"]

R = TypeVar("R")

_BUILTIN = {"local": "backends.local:LocalBackend", "remote": "backends.remote:RemoteBackend"}


@runtime_checkable
class Backend(Protocol):
    """Executes catalog operations for a principal."""

    name: str

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def execute(self, operation: Operation[R], principal: Principal | None = None) -> R:
        """Run `operation` as `principal` (None: the backend's own identity); its class's result type."""
        ...


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


@runtime_checkable
class StoreOperator(Protocol):
    """Operator entry points of a backend that owns a store, offered by its class (no instance is started).

    They run on the store directly: never a catalog operation and never a network call, so only whoever
    holds the store (and its sealing key) can run them. `pluginsdk auth break-glass` and
    `pluginsdk auth rotate-seal-key` call them; the built-in `local` backend offers them (docs/auth.md).
    """

    @staticmethod
    async def break_glass(settings: Settings, user_id: str) -> dict[str, Any]:
        """Give the administrator role back to `user_id`; the report says whether they can now administer."""
        ...

    @staticmethod
    async def rotate_seal_key(settings: Settings, *, wait: float) -> dict[str, Any]:
        """Reseal every secret under a new key (`resealed`, `keyFile`, `message`); refused while another
        process holds the store after `wait` seconds."""
        ...


def _load(target: str) -> type[Backend]:
    module, _, attr = target.partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module), attr)
    return cls


def backend_class(name: str) -> type[Backend]:
    """The class of the backend registered as `name` (built-ins first, then entry points)."""
    if name in _BUILTIN:
        return _load(_BUILTIN[name])
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="pluginsdk.backends") if ep.name == name]
    if not found:
        known = sorted({*_BUILTIN, *(ep.name for ep in entry_points(group="pluginsdk.backends"))})
        raise HandlerDiscoveryError(f"No backend named {name!r}; installed: {', '.join(known)}.")
    cls: type[Backend] = found[0].load()
    return cls


def load_backend(name: str, settings: Settings, **options: Any) -> Backend:
    """Instantiate the backend registered as `name` (built-ins first, then entry points)."""
    return backend_class(name)(settings, **options)  # type: ignore[call-arg]


def store_operator(name: str = "local") -> StoreOperator:
    """The operator entry points of the backend registered as `name` (ConfigurationError when it has none)."""
    cls = backend_class(name)
    if not isinstance(cls, StoreOperator):
        raise ConfigurationError(f"Backend {name!r} owns no store: it has no operator commands.")
    return cls
