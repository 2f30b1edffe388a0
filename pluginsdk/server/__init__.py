"""The REST server (extra `server`): `create_app()` and `serve()`; FastAPI and uvicorn load only here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["create_app", "serve"]


def create_app(engine_or_settings: Any) -> Any:
    from .app import create_app as _create

    return _create(engine_or_settings)


def serve(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    """Run the server in the foreground until SIGTERM/SIGINT (in-flight requests finish, the store closes)."""
    import uvicorn

    from .app import create_app as _create

    config = uvicorn.Config(
        _create(settings),
        host=host or settings.api.host,
        port=settings.api.port if port is None else port,
        log_level=settings.logging.level.lower(),
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
    )
    uvicorn.Server(config).run()
