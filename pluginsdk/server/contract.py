"""What the server needs of a backend: the backend contract plus authentication and tier 1.

The server never imports the engine. `create_app(settings)` builds the `local` backend through
`pluginsdk.backend.load_backend`; any object with these methods can be served instead.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from ..operations import Operation
from ..principal import Principal

__all__ = ["ServedBackend"]

R = TypeVar("R")


@runtime_checkable
class ServedBackend(Protocol):
    """A backend the REST server can serve."""

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def execute(
        self,
        operation: Operation[R],
        principal: Principal | None = None,
        *,
        route_path: str | None = None,
        route_checked: bool = False,
    ) -> R:
        """Authorize (tier 1 on `route_path`, the concrete request path; tier 2) and run the operation;
        `route_checked`: `check_route` already allowed (and counted) this principal on `route_path`."""
        ...

    async def authenticate(self, authorization: str | None) -> Principal:
        """The caller of an `Authorization` header value; AuthenticationError (401) if none is valid."""
        ...

    async def check_route(self, principal: Principal, method: str, path: str) -> None:
        """Tier 1 alone; PermissionDeniedError (403) unless `principal` may call `method path`."""
        ...

    async def ping(self) -> None:
        """Raise unless the backend's store answers (`GET /health`)."""
        ...
