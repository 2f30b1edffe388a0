"""What a backend is, and how one is found by name.

A backend is anything with `async execute(operation, principal) -> result` (typed: an `Operation[R]` gives
an `R`):
`local` runs the engine in-process, `remote` calls a pluginsdk server. Third
parties add backends through the `pluginsdk.backends` entry-point group.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, TypeVar, runtime_checkable

from .config import Settings
from .errors import HandlerDiscoveryError
from .operations import Operation
from .principal import Principal

__all__ = ["Backend", "load_backend"]

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


def _load(target: str) -> type[Backend]:
    module, _, attr = target.partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module), attr)
    return cls


def load_backend(name: str, settings: Settings, **options: Any) -> Backend:
    """Instantiate the backend registered as `name` (built-ins first, then entry points)."""
    if name in _BUILTIN:
        cls = _load(_BUILTIN[name])
    else:
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group="pluginsdk.backends") if ep.name == name]
        if not found:
            known = sorted({*_BUILTIN, *(ep.name for ep in entry_points(group="pluginsdk.backends"))})
            raise HandlerDiscoveryError(f"No backend named {name!r}; installed: {', '.join(known)}.")
        cls = found[0].load()
    return cls(settings, **options)  # type: ignore[call-arg]
