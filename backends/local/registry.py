"""Which handler runs which operation: each handler module's table, and the engine's registry of them.

A handler module declares its handlers in a table of its own (`handlers = HandlerTable(Deps)`, then
`@handlers.on(SomeCommand)`); importing it changes nothing outside it. The table names the type of what its
handlers take first: `Deps` (`deps.py`: the store, templates, providers, tier-2 filters) for the provisioning
handlers, `AuthService` for the auth handlers; the engine hands each handler the one object of that type it
holds, so no handler reaches into the engine. `HANDLER_MODULES` names, for each
operation module, the handler modules that serve its operations: the one place a handler module is named.
The engine owns a `HandlerRegistry`, which imports those modules and registers their tables on the first
call of one of their operations, so a CLI call imports only the handlers it runs. Handler modules depend on
this module and on what they receive, never on the engine, so the dependencies point one way:
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

__all__ = ["HANDLER_MODULES", "Handler", "HandlerRegistry", "HandlerTable"]

Handler = Callable[[Any, Any, "Call"], Awaitable[Any]]
"""`handler(deps, op, call)`: what its table says it receives (`HandlerTable.receives`), the operation (typed
by the handler) and its call (`call.py`)."""

_PROVISIONING = "backends.local.handlers"
_AUTH = "backends.local.auth.handlers"

HANDLER_MODULES: Mapping[str, tuple[str, ...]] = {
    "api_keys": (f"{_AUTH}.api_keys",),
    "audit": (f"{_AUTH}.audit",),
    "auth_sessions": (f"{_AUTH}.sessions",),
    "bootstrap": (f"{_AUTH}.bootstrap",),
    "constraints": (f"{_AUTH}.constraints",),
    "federation": (f"{_AUTH}.federation",),
    "grants": (f"{_AUTH}.grants",),
    "machine_signals": (f"{_PROVISIONING}.machines",),
    "machines": (f"{_PROVISIONING}.machines",),
    "policy_checks": (f"{_AUTH}.policy_checks",),
    "requests": tuple(
        f"{_PROVISIONING}.{name}" for name in ("request_queries", "provisioning", "returns", "request_cleanup")
    ),
    "roles": (f"{_AUTH}.roles",),
    "routes": (f"{_AUTH}.routes",),
    "system": (f"{_PROVISIONING}.system",),
    "template_writes": (f"{_PROVISIONING}.template_writes",),
    "templates": (f"{_PROVISIONING}.templates",),
    "users": (f"{_AUTH}.users",),
}
"""Operation module (`pluginsdk/operations/<name>.py`) -> the handler modules serving its operations.
`tests/test_handler_registry.py` checks that each operation is served by a module listed for its own."""


class HandlerTable(dict[type[Operation], Handler]):
    """One handler module's handlers: operation class -> handler (one handler per class)."""

    def __init__(self, receives: type) -> None:
        super().__init__()
        self.receives = receives
        """The type of the object each handler here takes first (`Deps` or `AuthService`)."""
        self.takes: dict[type[Operation], type] = {}
        """Operation class -> what its handler takes first: `receives`, unless `on` named another."""

    def on(self, *ops: type[Operation], receives: type | None = None) -> Callable[[Handler], Handler]:
        """Declare the decorated function the handler of `ops`; `receives` when it takes other than the
        table's `receives` (a handler that needs less, e.g. one that also runs without the auth service)."""

        def deco(fn: Handler) -> Handler:
            for op in ops:
                if op in self:
                    raise HandlerDiscoveryError(f"Two handlers for {op.__name__}.")
                self[op] = fn
                self.takes[op] = receives or self.receives
            return fn

        return deco


class HandlerRegistry:
    """The engine's handlers: filled from the handler modules' tables as operations are first called."""

    def __init__(self, modules: Mapping[str, tuple[str, ...]] = HANDLER_MODULES) -> None:
        self._modules = modules
        self._handlers: dict[type[Operation], Handler] = {}
        self._receives: dict[type[Operation], type] = {}
        self._loaded: set[str] = set()

    def register(self, table: HandlerTable) -> None:
        """Add a module's handlers; an operation served by two different handlers is an error."""
        for op, fn in table.items():
            if self._handlers.get(op, fn) is not fn:
                raise HandlerDiscoveryError(f"Two handlers for {op.__name__}.")
            self._handlers[op] = fn
            self._receives[op] = table.takes[op]

    def get(self, op: type[Operation]) -> Handler | None:
        """The handler of `op`, loading the handler modules `HANDLER_MODULES` names for its operation module."""
        found = self._handlers.get(op)
        if found is not None:
            return found
        for module_name in self._modules.get(op.__module__.rsplit(".", 1)[-1], ()):
            self._load(module_name)
        return self._handlers.get(op)

    def receives(self, op: type[Operation]) -> type:
        """The type of what the handler of `op` takes first (its table's `receives`); after `get` found it."""
        return self._receives[op]

    def _load(self, module_name: str) -> None:
        if module_name in self._loaded:
            return
        table = getattr(importlib.import_module(module_name), "handlers", None)
        if not isinstance(table, HandlerTable):
            raise HandlerDiscoveryError(f"{module_name} has no `handlers = HandlerTable(...)`.")
        self.register(table)
        self._loaded.add(module_name)
