"""The local backend: the engine in this process."""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from pluginsdk.config import Settings
from pluginsdk.operations import Operation
from pluginsdk.principal import SYSTEM_ADMIN, Principal

if TYPE_CHECKING:
    from pluginsdk.periodic import PeriodicTask

    from .store.changes import Watch
    from .store.held import HeldStore

__all__ = ["LocalBackend"]

R = TypeVar("R")


class LocalBackend:
    """Runs operations in-process on the engine (store, providers, policy).

    Also what the REST server serves (`pluginsdk.server.contract.ServedBackend`): `authenticate` and the tier-1
    `check_route` of the engine's authorizer, `execute` with the concrete request path, and `ping`.
    """

    name = "local"

    # -- operator entry points (pluginsdk.backend.StoreOperator): on the store, for whoever holds it --------
    @staticmethod
    async def break_glass(settings: Settings, user_id: str) -> dict[str, Any]:
        """Give the administrator role back to `user_id`, directly in the store (`auth/break_glass.py`).

        Starts an engine of its own for the store and the auth service the repair needs; the service is started
        even where this configuration disables authorization, so the store is repaired all the same.
        """
        from .auth import start_auth
        from .auth.break_glass import break_glass, check_user_id
        from .engine import Engine

        check_user_id(user_id)
        engine = Engine(settings)
        await engine.start()
        try:
            return await break_glass(engine.auth or await start_auth(engine), user_id)
        finally:
            await engine.aclose()

    @staticmethod
    async def rotate_seal_key(settings: Settings, *, wait: float = 5.0) -> dict[str, Any]:
        """Reseal the store's secrets under a new key (PLUGIN_SEAL_KEY_NEW, else a fresh one): auth/seal_rotation.py."""
        from .auth.seal_rotation import new_key_from_env, rotate, rotated_message

        key, count = await rotate(settings, new_key_from_env(), wait=wait)
        return {
            "resealed": count,
            "keyFile": str(key.path) if key.path else None,
            "message": rotated_message(key, count),
        }

    def __init__(
        self, settings: Settings, *, background: bool = False, periodic: Iterable[PeriodicTask] = (), **_: Any
    ) -> None:
        """`background`: the engine runs its periodic tasks — its own reconcile pass and `periodic`, the ones the
        serving process registers (`pluginsdk.periodic.PeriodicTask`)."""
        from .engine import Engine

        self.settings = settings
        self.engine = Engine(settings, background=background, periodic=periodic)
        self._started = False
        self._held: HeldStore | None = None

    async def start(self) -> None:
        if not self._started:
            await self.engine.start()
            self._started = True

    async def aclose(self) -> None:
        if self._started:
            await self.engine.aclose()
            self._started = False
            self._held = None

    def execute(
        self,
        operation: Operation[R],
        principal: Principal | None = None,
        *,
        route_path: str | None = None,
        route_checked: bool = False,
    ) -> Coroutine[Any, Any, R]:
        """The engine's `execute` as `principal` (None: the system administrator), the engine started first if
        it is not; a plain function handing back the engine's coroutine, so a call has no frame of this layer."""
        if not self._started:
            return self._started_then(operation, principal or SYSTEM_ADMIN, route_path, route_checked)
        return self.engine.execute(
            operation, principal or SYSTEM_ADMIN, route_path=route_path, route_checked=route_checked
        )

    async def _started_then(
        self, operation: Operation[R], principal: Principal, route_path: str | None, route_checked: bool
    ) -> R:
        await self.start()
        result: R = await self.engine.execute(operation, principal, route_path=route_path, route_checked=route_checked)
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
        return self.engine.store.changes.watch(request_id)

    async def ping(self) -> None:
        """Raise unless the store answers (the server's `/health`)."""
        await self.engine.store.ping()

    def held(self) -> HeldStore:
        """The server's sessions and grants, on the engine's store (`store/held.py`)."""
        if self._held is None:
            from .store.held import HeldStore

            self._held = HeldStore(self.engine.store.db, self.settings.api.held)
        return self._held

    async def ready(self) -> dict[str, int]:
        """The server's `/readyz`: raises unless the store answers; the schema's migration and this build's."""
        from .store.schema import MIGRATIONS

        if not self.engine.started:
            raise RuntimeError("the engine is not started")
        return {"schema": await self.engine.store.schema_version(), "expected": max(MIGRATIONS)}

    async def inventory(self) -> dict[str, list[dict[str, Any]]]:
        """Machines and requests counted by status and provider, and the launch candidates the capacity memory
        holds (the server's /metrics gauges; one statement each, whatever the size of the store)."""
        if not self.engine.started:
            return {"machines": [], "requests": [], "offerings": []}
        machines, requests = await self.engine.store.inventory()
        offerings = [
            {"offering": o.key, "provider": o.provider, "state": o.state, "failures": o.failures}
            for o in await self.engine.deps.capacity.states()
        ]
        listed = {"machines": machines, "requests": requests}
        return listed | {"offerings": offerings}
