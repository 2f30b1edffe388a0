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
    """Run the server in the foreground until SIGTERM/SIGINT (in-flight requests finish, the store closes).

    One worker on the standard asyncio loop with uvicorn's httptools parser, each response sent in one write
    (`_protocol.CorkedHttpToolsProtocol`). uvloop is not used: measured at 64 concurrent connections it gave
    no more throughput than the asyncio loop for this app, and a p99 of ~1 s against ~0.1 s (it serves some
    connections late), see docs/benchmarks.md.
    """
    import uvicorn

    from ._protocol import CorkedHttpToolsProtocol
    from .app import create_app as _create

    config = uvicorn.Config(
        _create(settings),
        http=CorkedHttpToolsProtocol,
        loop="asyncio",
        host=host or settings.api.host,
        port=settings.api.port if port is None else port,
        log_level=settings.logging.level.lower(),
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
    )
    uvicorn.Server(config).run()
