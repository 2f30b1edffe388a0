"""The local backend: the engine in this process."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from pluginsdk.config import Settings
from pluginsdk.operations import Operation
from pluginsdk.principal import SYSTEM_ADMIN, Principal

if TYPE_CHECKING:
    from .store.changes import Watch

__all__ = ["LocalBackend"]

R = TypeVar("R")


class LocalBackend:
    """Runs operations in-process on the engine (store, providers, policy).

    Also what the REST server serves (`pluginsdk.server.ServedBackend`): `authenticate` and the tier-1
    `check_route` of the engine's authorizer, `execute` with the concrete request path, and `ping`.
    """

    name = "local"

    # -- operator entry points (pluginsdk.backend.StoreOperator): on the store, no engine started ---------
    @staticmethod
    async def break_glass(settings: Settings, user_id: str) -> dict[str, Any]:
        """Give the administrator role back to `user_id`, directly in the store (`auth/break_glass.py`)."""
        from .auth.break_glass import break_glass

        return await break_glass(settings, user_id)

    @staticmethod
    async def rotate_seal_key(settings: Settings, *, wait: float = 5.0) -> dict[str, Any]:
        """Reseal the store's secrets under a new key (PLUGIN_SEAL_KEY_NEW, else a fresh one; `store/sealing.py`)."""
        from .store.sealing import new_key_from_env, rotate, rotated_message

        key, count = await rotate(settings, new_key_from_env(), wait=wait)
        return {
            "resealed": count,
            "keyFile": str(key.path) if key.path else None,
            "message": rotated_message(key, count),
        }

    def __init__(self, settings: Settings, *, background: bool = False, **_: Any) -> None:
        from .engine import Engine

        self.settings = settings
        self.engine = Engine(settings, background=background)
        self._started = False

    async def start(self) -> None:
        if not self._started:
            await self.engine.start()
            self._started = True

    async def aclose(self) -> None:
        if self._started:
            await self.engine.aclose()
            self._started = False

    async def execute(
        self,
        operation: Operation[R],
        principal: Principal | None = None,
        *,
        route_path: str | None = None,
        route_checked: bool = False,
    ) -> R:
        if not self._started:
            await self.start()
        result: R = await self.engine.execute(
            operation, principal or SYSTEM_ADMIN, route_path=route_path, route_checked=route_checked
        )
        return result

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an HTTP `Authorization` header value; AuthenticationError (401) if none."""
        return await self.engine.authz.authenticate(authorization)

    async def check_route(self, principal: Principal, method: str, path: str) -> None:
        """Tier 1 on the concrete path; PermissionDeniedError (403) if the principal may not call it."""
        await self.engine.authz.check_route(principal, method, path)

    def watch_request(self, request_id: str) -> AbstractAsyncContextManager[Watch]:
        """Watch a request for changes any server on the store writes (`store/changes.py`): the console's
        progress stream waits on it between readings."""
        return self.engine.db.changes.watch(request_id)

    async def ping(self) -> None:
        """Raise unless the store answers (the server's `/health`)."""
        await self.engine.db.db.fetchone("SELECT 1 AS ok")

    async def ready(self) -> dict[str, int]:
        """The server's `/readyz`: raises unless the store answers; the schema's migration and this build's."""
        from .store.schema import MIGRATIONS

        if self.engine.store is None:
            raise RuntimeError("the engine is not started")
        row = await self.engine.db.db.fetchone("SELECT version FROM schema_version WHERE id = 1")
        return {"schema": int(row["version"]) if row else 0, "expected": max(MIGRATIONS)}

    async def inventory(self) -> dict[str, list[dict[str, Any]]]:
        """Machines and requests counted by status and provider, and the launch candidates the capacity memory
        holds (the server's /metrics gauges; one statement each, whatever the size of the store)."""
        if self.engine.store is None:
            return {"machines": [], "requests": [], "offerings": []}
        db = self.engine.db.db
        machines = await db.fetchall(
            "SELECT status, provider_name, COUNT(*) AS n FROM machines GROUP BY status, provider_name"
        )
        requests = await db.fetchall(
            "SELECT request_type, status, provider_name, COUNT(*) AS n FROM requests"
            " GROUP BY request_type, status, provider_name"
        )
        offerings = [
            {"offering": o.key, "provider": o.provider, "state": o.state, "failures": o.failures}
            for o in await self.engine.deps.capacity.states()
        ]
        listed = {"machines": [dict(r) for r in machines], "requests": [dict(r) for r in requests]}
        return listed | {"offerings": offerings}
