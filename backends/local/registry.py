"""Which handler runs which operation: what a handler module declares, its table.

A handler module declares its handlers in a table of its own (`handlers = HandlerTable(Deps)`, then
`@handlers.on(SomeCommand)`); importing it changes nothing outside it. The table names the type of what its
handlers take first: `Deps` (`deps.py`: the store, templates, providers, tier-2 filters) for the provisioning
handlers, `AuthService` for the auth handlers; the engine hands each handler the one object of that type it
holds, so no handler reaches into the engine. The engine finds the tables: its `HandlerRegistry`
(`engine.py`, with `HANDLER_MODULES`, the one place a handler module is named) imports a handler module on
the first call of one of its operations. Handler modules depend on this module and on what they receive,
never on the engine, so the dependencies point one way: engine -> handlers -> registry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import HandlerDiscoveryError
from pluginsdk.operations import Operation

if TYPE_CHECKING:
    from .call import Call

__all__ = ["Handler", "HandlerTable"]

Handler = Callable[[Any, Any, "Call"], Awaitable[Any]]
"""`handler(deps, op, call)`: what its table says it receives (`HandlerTable.receives`), the operation (typed
by the handler) and its call (`call.py`)."""


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
