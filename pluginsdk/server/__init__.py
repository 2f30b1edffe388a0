"""The REST server (extra `server`): `create_app()` and `serve()`; FastAPI and uvicorn load only here."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Settings
    from .app import PluginApp
    from .contract import ServedBackend

__all__ = ["create_app", "http_protocol", "operator_app", "serve", "worker_app"]

log = logging.getLogger("pluginsdk.server")

_SETTINGS_ENV = "PLUGINSDK_SERVER_SETTINGS"
"""The settings `serve()` hands to its worker processes (JSON), read by `worker_app()`."""


def create_app(backend_or_settings: ServedBackend | Settings, *, max_body_bytes: int | None = None) -> PluginApp:
    """The ASGI app serving every catalog operation for `backend_or_settings` (`app.create_app`)."""
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


def operator_app(settings: Settings) -> PluginApp:
    """The served app: the REST app with its metrics installed (/metrics, and every request timed by route
    template through `PluginApp.observe`), logging configured from `settings.logging`, the collector tuned for
    a server (`pluginsdk._gc.tune_for_server`) and the HTTP protocol's header timeout set
    (`api.header_timeout`): this runs in the process that serves, each worker's included."""
    from .._gc import tune_for_server
    from ..logs import configure
    from .app import create_app as _create

    configure(settings.logging.level, settings.logging.format, settings.logging.file)
    tune_for_server()
    with contextlib.suppress(Exception):  # on uvicorn's stock protocol (`http_protocol()`) there is none
        from ._protocol import DoorHttpToolsProtocol

        DoorHttpToolsProtocol.header_timeout = settings.api.header_timeout
    app = _create(settings)
    if settings.api.metrics != "off":
        from .metrics import Metrics

        app.metrics = Metrics(providers=tuple(settings.provider.instance_names()))
        app.metrics.install()
        app.observe = app.metrics.observe_http
    return app


def worker_app() -> Any:
    """uvicorn's app factory in each worker process of `serve(workers=N)`."""
    import json
    import os

    from ..config import Settings

    app = operator_app(Settings.model_validate(json.loads(os.environ[_SETTINGS_ENV])))
    freeze_startup_heap()
    return app


def freeze_startup_heap() -> None:
    """Move what the process holds once it is built (modules, the app, the catalog: ~110,000 objects) out of
    the collector's reach: a full collection then scans only what requests made, where it would otherwise
    stop the event loop ~0.1 s each time a burst of allocations (a what-if, a large listing) sets one off."""
    import gc

    gc.collect()
    gc.freeze()


def serve(settings: Settings, host: str | None = None, port: int | None = None, workers: int | None = None) -> None:
    """Run the server in the foreground until SIGTERM/SIGINT (in-flight requests finish, the store closes).

    One worker on the standard asyncio loop with uvicorn's httptools parser, request-head limits, the header
    timeout and the connection limit in the error envelope, and each response sent in one write
    (`http_protocol()`); no WebSocket support (an upgrade request is plain HTTP). uvloop is not used: measured at 64
    concurrent connections it gave no more throughput than the asyncio loop for this app, and a p99 of ~1 s
    against ~0.1 s (it serves some connections late), see docs/benchmarks.md.
    """
    import uvicorn

    workers = workers or settings.api.workers
    options: dict[str, Any] = {
        "http": http_protocol(),
        "loop": "asyncio",
        "host": host or settings.api.host,
        "port": settings.api.port if port is None else port,
        "log_level": settings.logging.level.lower(),
        "access_log": False,
        "lifespan": "on",
        "ws": "none",
        "timeout_keep_alive": settings.api.keep_alive_timeout,
        "limit_concurrency": settings.api.max_connections,
        "timeout_graceful_shutdown": 30,
    }
    if settings.logging.format == "json":
        options["log_config"] = None  # uvicorn's own lines go through our JSON handler too
    if workers <= 1:
        app = operator_app(settings)
        freeze_startup_heap()
        uvicorn.Server(uvicorn.Config(app, **options)).run()
        return
    _serve_workers(settings, workers, options)


def _serve_workers(settings: Settings, workers: int, options: dict[str, Any]) -> None:
    """N processes accept on one socket (uvicorn's supervisor); SIGTERM/SIGINT stops all of them gracefully.

    Metrics: each worker writes its samples under PROMETHEUS_MULTIPROC_DIR (a fresh private directory unless
    the operator set one), so a scrape served by any worker reports the sum of all.
    """
    import json
    import os
    import shutil
    import tempfile

    import uvicorn

    made = None
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        made = tempfile.mkdtemp(prefix="pluginsdk-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
    os.environ[_SETTINGS_ENV] = json.dumps(settings.model_dump(mode="json"))
    try:
        uvicorn.run("pluginsdk.server:worker_app", factory=True, workers=workers, **options)
    finally:
        os.environ.pop(_SETTINGS_ENV, None)
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
