"""What the server needs of a backend: the backend contract plus authentication and tier 1.

The server never imports the engine. `create_app(settings)` builds the `local` backend through
`pluginsdk.backend.load_backend`; any object with these methods can be served instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from ..operations import Operation
from ..principal import Principal

if TYPE_CHECKING:
    from ..config import HeldSettings

__all__ = ["HeldState", "ServedBackend"]

Row = Mapping[str, Any]


class HeldState(Protocol):
    """What the server holds for callers between requests, kept in the backend's store so every server and
    worker on it answers any request (console sessions, /mcp's OAuth clients and grants). Secrets arrive
    hashed (`key`) and credentials sealed; the backend never sees either in the clear."""

    limits: HeldSettings

    async def admit(self, kind: str, client: str | None, limit: int, window: float) -> float:
        """Count one anonymous creation of `kind` from address `client`: 0, or the seconds to wait (refused)."""
        ...

    async def open_session(self, key: str, row: dict[str, Any], per_user: int) -> None: ...

    async def session(self, key: str, idle: float, *, touch: bool = True) -> Row | None: ...

    async def end_session(self, key: str) -> None: ...

    async def add_client(
        self, client_id: str, data: str, client: str | None, per_address: int, idle: float
    ) -> bool: ...

    async def client(self, client_id: str) -> str | None: ...

    async def touch_client(self, client_id: str) -> None: ...

    async def add_grant(self, key: str, row: dict[str, Any], *, per_user: int = 0, per_address: int = 0) -> bool: ...

    async def grant(self, key: str, kind: str) -> Row | None: ...

    async def take_grant(self, key: str, kind: str) -> Row | None: ...

    async def use_refresh(self, key: str) -> tuple[Row | None, bool]: ...

    async def end_family(self, family: str) -> None: ...


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

    def held(self) -> HeldState:
        """Where the server keeps sessions and grants (the started backend's store)."""
        ...
