"""Which handler runs which operation: each handler module's table, and the engine's registry of them.

A handler module declares its handlers in a table of its own (`handlers = HandlerTable()`, then
`@handlers.on(SomeCommand)`); importing it changes nothing outside it. The engine owns a
`HandlerRegistry` and registers a module's table explicitly, on the first call of one of its
operations, so a CLI call imports only the handlers it runs. Handler modules depend on this module,
never on the engine (they name `Engine` for the type checker only), so the dependencies point one way:
engine -> registry <- handlers.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import HandlerDiscoveryError
from pluginsdk.operations import Operation

if TYPE_CHECKING:
    from .call import Call
    from .engine import Engine

__all__ = ["HANDLER_PACKAGES", "Handler", "HandlerRegistry", "HandlerTable"]

Handler = Callable[["Engine", Any, "Call"], Awaitable[Any]]
"""`handler(engine, op, call)`: the operation (typed by the handler) and its call (`call.py`)."""

HANDLER_PACKAGES = ("backends.local.handlers", "backends.local.auth.handlers")
"""Where handler modules live; each is named like the operation module it serves."""

_RENAMED = {"auth_sessions": "sessions"}
"""Operation module -> handler module, where the names differ."""


class HandlerTable(dict[type[Operation], Handler]):
    """One handler module's handlers: operation class -> handler (one handler per class)."""

    def on(self, *ops: type[Operation]) -> Callable[[Handler], Handler]:
        """Declare the decorated function the handler of `ops`."""

        def deco(fn: Handler) -> Handler:
            for op in ops:
                if op in self:
                    raise HandlerDiscoveryError(f"Two handlers for {op.__name__}.")
                self[op] = fn
            return fn

        return deco


class HandlerRegistry:
    """The engine's handlers: filled from the handler modules' tables as operations are first called."""

    def __init__(self, packages: tuple[str, ...] = HANDLER_PACKAGES) -> None:
        self._packages = packages
        self._handlers: dict[type[Operation], Handler] = {}
        self._loaded: set[str] = set()

    def register(self, table: Mapping[type[Operation], Handler]) -> None:
        """Add a module's handlers; an operation served by two different handlers is an error."""
        for op, fn in table.items():
            if self._handlers.get(op, fn) is not fn:
                raise HandlerDiscoveryError(f"Two handlers for {op.__name__}.")
            self._handlers[op] = fn

    def get(self, op: type[Operation]) -> Handler | None:
        """The handler of `op`, loading its module (named like the operation module) on first use."""
        found = self._handlers.get(op)
        if found is not None:
            return found
        group = op.__module__.rsplit(".", 1)[-1]
        for package in self._packages:
            self._load(f"{package}.{_RENAMED.get(group, group)}", missing_ok=True)
            if op in self._handlers:
                return self._handlers[op]
        self._load_all()  # a handler module named otherwise
        return self._handlers.get(op)

    def _load(self, module_name: str, *, missing_ok: bool = False) -> None:
        if module_name in self._loaded:
            return
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if missing_ok and exc.name == module_name:
                return
            raise
        self._loaded.add(module_name)
        table = getattr(module, "handlers", None)
        if isinstance(table, HandlerTable):
            self.register(table)

    def _load_all(self) -> None:
        import pkgutil

        for package in self._packages:
            for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
                if not info.name.startswith("_"):
                    self._load(f"{package}.{info.name}")
