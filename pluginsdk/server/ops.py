"""What operators watch a server by: /metrics, /livez, /readyz, routes of the app's one door like any other.

Each is an endpoint of `PluginApp`'s router, so the common HTTP rules of docs/rest.md hold for them too
(`X-Request-ID`, 405 with `Allow` for another method, `OPTIONS`, the access log and the request metrics).

- /livez: 200 while the process serves (no store access: a slow database must not get it restarted).
- /readyz: 200 only when the store answers and its schema is at this build's migration; else 503 in the
  error envelope (`NOT_READY`, `details` saying what is missing: `store`, `schema`, `expected`).
- /metrics: `api.metrics` decides who may read it: `loopback` (default; clients on 127.0.0.1/::1 — behind
  a reverse proxy on the same host every client looks local, so do not route /metrics through it),
  `authenticated` (a credential whose policy allows GET /metrics), `open`, or `off` (404). Refusals are the
  REST API's own errors in its envelope: 401 UNAUTHENTICATED, 403 FORBIDDEN, 404 NOT_FOUND. The app serves
  metrics once `pluginsdk.server.operator_app` gave it its instruments (`PluginApp.metrics`); until then 404.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import AuthenticationError, PermissionDeniedError, SDKError
from ._endpoint import Endpoint, Reply, error_body
from .limits import RouteNotFound

if TYPE_CHECKING:
    from starlette.types import Receive

    from .app import Head, PluginApp

__all__ = ["OPERATOR_ROUTES", "NotReady"]

_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_NO_STORE = ((b"cache-control", b"no-store"),)


class NotReady(SDKError):
    """/readyz: the store does not answer, or its schema is behind this build (migrations not done)."""

    error_code = "NOT_READY"
    http_status: ClassVar[int] = 503


class _Livez(Endpoint):
    route = "/livez"
    headers = _NO_STORE

    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        return 200, b'{"status":"ok"}', None


class _Readyz(Endpoint):
    route = "/readyz"
    headers = _NO_STORE

    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        status, detail = await _ready(app.backend)
        return status, json.dumps(detail).encode(), None


class _Metrics(Endpoint):
    route = "/metrics"
    headers = _NO_STORE

    def __init__(self) -> None:
        from .metrics import CONTENT_TYPE

        self.content_type = CONTENT_TYPE

    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        refused = await _metrics_refusal(app, head)
        if refused is not None:
            return refused.http_status, error_body(refused), None
        return 200, await app.metrics.exposition(app.backend), None


OPERATOR_ROUTES: tuple[tuple[str, str, type[Endpoint]], ...] = (
    ("GET", "/livez", _Livez),
    ("GET", "/metrics", _Metrics),
    ("GET", "/readyz", _Readyz),
)
"""(method, path, endpoint) of the operator routes, in the app's router."""


async def _ready(backend: Any) -> tuple[int, dict[str, Any]]:
    ready = getattr(backend, "ready", None)
    try:
        if ready is None:  # a backend without the check: its ping is all we can ask
            await backend.ping()
            return 200, {"status": "ok", "store": "ok"}
        state = await ready()
    except Exception:
        return _refusal(NotReady("Not ready: the store does not answer.", details={"store": "unreachable"}))
    if state["schema"] < state["expected"]:
        message = f"Not ready: the store's schema is at migration {state['schema']} of {state['expected']}."
        return _refusal(NotReady(message, details={"store": "ok", **state}))
    return 200, {"status": "ok", "store": "ok", "schema": state["schema"]}


async def _metrics_refusal(app: PluginApp, head: Head) -> SDKError | None:
    """Why this caller may not read /metrics under `api.metrics`, or None."""
    access = app.metrics_access
    if app.metrics is None or access == "off":
        return RouteNotFound("No route has this path.", details={"value": "/metrics"})
    if access == "loopback":
        if head.client not in _LOOPBACK:
            return PermissionDeniedError("Not authorized: /metrics is served to loopback clients only.")
        return None
    return await _denied(app.backend, head.authorization) if access == "authenticated" else None


async def _denied(backend: Any, authorization: str | None) -> SDKError | None:
    """Through the served backend's contract: authenticate (401), then tier 1 on GET /metrics (403)."""
    try:
        principal = await backend.authenticate(authorization)
    except SDKError as err:
        return err if err.http_status == 401 else AuthenticationError("Authentication required to read /metrics.")
    try:
        await backend.check_route(principal, "GET", "/metrics")
    except SDKError as err:
        return err if err.http_status == 403 else PermissionDeniedError("Not authorized to read /metrics.")
    return None


def _refusal(err: SDKError) -> tuple[int, dict[str, Any]]:
    return err.http_status, err.to_envelope()
