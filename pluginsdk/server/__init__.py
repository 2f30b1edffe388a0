"""The REST server (extra `server`): `create_app()` and `serve()`; FastAPI and uvicorn load only here."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Settings
    from .app import PluginApp

__all__ = ["create_app", "http_protocol", "serve"]

log = logging.getLogger("pluginsdk.server")


def create_app(backend_or_settings: Any, *, max_body_bytes: int | None = None) -> PluginApp:
    from .app import create_app as _create

    return _create(backend_or_settings, max_body_bytes=max_body_bytes)


def http_protocol() -> Any:
    """The uvicorn HTTP protocol `serve()` runs: ours (`_protocol.DoorHttpToolsProtocol`), or uvicorn's stock
    one ("auto") if ours does not import against the installed uvicorn (it subclasses a private class)."""
    try:
        from ._protocol import DoorHttpToolsProtocol
    except Exception as exc:  # any failure to build on uvicorn's internals: serve with the stock protocol
        log.warning("serving with uvicorn's stock HTTP protocol (%s: %s)", type(exc).__name__, exc)
        return "auto"
    return DoorHttpToolsProtocol


def serve(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    """Run the server in the foreground until SIGTERM/SIGINT (in-flight requests finish, the store closes).

    One worker on the standard asyncio loop with uvicorn's httptools parser, request-head limits in the error
    envelope and each response sent in one write (`http_protocol()`). uvloop is not used: measured at 64
    concurrent connections it gave no more throughput than the asyncio loop for this app, and a p99 of ~1 s
    against ~0.1 s (it serves some connections late), see docs/benchmarks.md.
    """
    import uvicorn

    from .app import create_app as _create

    config = uvicorn.Config(
        _create(settings),
        http=http_protocol(),
        loop="asyncio",
        host=host or settings.api.host,
        port=settings.api.port if port is None else port,
        log_level=settings.logging.level.lower(),
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
    )
    uvicorn.Server(config).run()
