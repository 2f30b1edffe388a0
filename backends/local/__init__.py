"""The local backend: the engine in this process."""

from __future__ import annotations

from typing import Any

from pluginsdk.config import Settings
from pluginsdk.operations import Operation
from pluginsdk.principal import SYSTEM_ADMIN, Principal

__all__ = ["LocalBackend"]


class LocalBackend:
    """Runs operations in-process on the engine (store, providers, policy)."""

    name = "local"

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

    async def execute(self, operation: Operation, principal: Principal | None = None) -> Any:
        if not self._started:
            await self.start()
        return await self.engine.execute(operation, principal or SYSTEM_ADMIN)
