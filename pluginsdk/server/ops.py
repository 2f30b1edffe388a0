"""What operators watch a server by, in front of the app: /metrics, /livez, /readyz, request-id log context.

`OperatorApp` wraps the REST app (ASGI): it answers its three paths itself, and for every other request it
fixes the request id first (the incoming X-Request-ID, clipped, or a new one, passed on to the app in the
header so both agree), sets it as the log context (`pluginsdk._logs.request_id`) so every line the request
causes carries it, and times the request into the HTTP duration histogram by route template.

- /livez: 200 while the process serves (no store access: a slow database must not get it restarted).
- /readyz: 200 only when the store answers and its schema is at this build's migration; else 503 in the
  error envelope (`NOT_READY`, `details` saying what is missing: `store`, `schema`, `expected`).
- /metrics: `api.metrics` decides who may read it: `loopback` (default; clients on 127.0.0.1/::1 — behind
  a reverse proxy on the same host every client looks local, so do not route /metrics through it),
  `authenticated` (a credential whose policy allows GET /metrics), `open`, or `off` (404). Refusals are the
  REST API's own errors in its envelope: 401 UNAUTHENTICATED, 403 FORBIDDEN, 404 NOT_FOUND.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, ClassVar

from .._logs import new_request_id, request_id
from ..errors import AuthenticationError, PermissionDeniedError, SDKError
from .limits import RouteNotFound

__all__ = ["NotReady", "OperatorApp", "RouteTemplates"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]
_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_JSON = [(b"content-type", b"application/json")]


class NotReady(SDKError):
    """/readyz: the store does not answer, or its schema is behind this build (migrations not done)."""

    error_code = "NOT_READY"
    http_status: ClassVar[int] = 503


class RouteTemplates:
    """Concrete path -> the catalog's route template (`/api/v1/requests/{request_id}`), for metric labels."""

    def __init__(self) -> None:
        from pluginsdk.operations import CATALOG

        self._exact: set[str] = set()
        self._patterns: dict[int, list[tuple[list[str], str]]] = {}
        for spec in CATALOG.values():
            rest = getattr(spec, "rest", None)
            paths = list(getattr(rest, "paths", ()) or ()) if rest is not None else []
            if not paths and getattr(spec, "route", None):
                paths = [spec.route]
            for path in paths:
                if "{" not in path:
                    self._exact.add(path)
                else:
                    parts = path.strip("/").split("/")
                    self._patterns.setdefault(len(parts), []).append((parts, path))
        for patterns in self._patterns.values():  # literal segments first: /auth/roles/me before /auth/roles/{x}
            patterns.sort(key=lambda p: [s.startswith("{") for s in p[0]])
        self._exact.update({"/health", "/openapi.json", "/docs"})

    def of(self, path: str) -> str:
        if path in self._exact:
            return path
        parts = path.strip("/").split("/")
        for pattern, template in self._patterns.get(len(parts), ()):
            if all(p.startswith("{") or p == s for p, s in zip(pattern, parts, strict=True)):
                return template
        return "other"  # unknown paths share one label: no cardinality from scanners


class OperatorApp:
    def __init__(self, app: Any, settings: Any, metrics: Any | None) -> None:
        self.app = app
        self.settings = settings
        self.metrics = metrics
        self.access = getattr(getattr(settings, "api", None), "metrics", "loopback")
        self.routes = RouteTemplates()

    def __getattr__(self, name: str) -> Any:  # the wrapped app's attributes (backend, router, openapi ...)
        return getattr(self.app, name)

    @property
    def backend(self) -> Any:
        return self.app.backend

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path in ("/livez", "/readyz", "/metrics") and scope["method"] in ("GET", "HEAD"):
            await self._operator(path, scope, send)
            return
        rid = ""
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                rid = value.decode("latin-1")[:128]
                break
        if not rid:
            rid = new_request_id()
            scope["headers"] = [*scope["headers"], (b"x-request-id", rid.encode("latin-1"))]
        token = request_id.set(rid)
        status = 500
        started = time.perf_counter()

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            request_id.reset(token)
            if self.metrics is not None:
                self.metrics.observe_http(self.routes.of(path), scope["method"], status, time.perf_counter() - started)

    async def _operator(self, path: str, scope: Scope, send: Any) -> None:
        status, body, headers = 200, b"", list(_JSON)
        if path == "/livez":
            body = b'{"status":"ok"}'
        elif path == "/readyz":
            status, detail = await self._ready()
            body = json.dumps(detail).encode()
        else:
            status, body, headers = await self._metrics(scope)
        await send({"type": "http.response.start", "status": status, "headers": [
            *headers, (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store"),
        ]})  # fmt: skip
        await send({"type": "http.response.body", "body": body if scope["method"] == "GET" else b""})

    async def _ready(self) -> tuple[int, dict[str, Any]]:
        ready = getattr(self.backend, "ready", None)
        try:
            if ready is None:  # a backend without the check: its ping is all we can ask
                await self.backend.ping()
                return 200, {"status": "ok", "store": "ok"}
            state = await ready()
        except Exception:
            return _refusal(NotReady("Not ready: the store does not answer.", details={"store": "unreachable"}))
        if state["schema"] < state["expected"]:
            message = f"Not ready: the store's schema is at migration {state['schema']} of {state['expected']}."
            return _refusal(NotReady(message, details={"store": "ok", **state}))
        return 200, {"status": "ok", "store": "ok", "schema": state["schema"]}

    async def _metrics(self, scope: Scope) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        refused = await self._metrics_refusal(scope)
        if refused is not None or self.metrics is None:
            status, detail = _refusal(refused or RouteNotFound("No route has this path."))
            return status, json.dumps(detail).encode(), list(_JSON)
        from .metrics import CONTENT_TYPE

        return 200, await self.metrics.exposition(self.backend), [(b"content-type", CONTENT_TYPE)]

    async def _metrics_refusal(self, scope: Scope) -> SDKError | None:
        """Why this caller may not read /metrics under `api.metrics`, or None."""
        if self.metrics is None or self.access == "off":
            return RouteNotFound("No route has this path.", details={"value": "/metrics"})
        if self.access == "loopback":
            client = scope.get("client") or ("", 0)
            if client[0] not in _LOOPBACK:
                return PermissionDeniedError("Not authorized: /metrics is served to loopback clients only.")
            return None
        return await self._denied(scope) if self.access == "authenticated" else None

    async def _denied(self, scope: Scope) -> SDKError | None:
        """Through the served backend's contract: authenticate (401), then tier 1 on GET /metrics (403)."""
        backend = self.backend
        header = next((v.decode("latin-1") for n, v in scope["headers"] if n == b"authorization"), None)
        if backend is None or not hasattr(backend, "check_route"):
            return PermissionDeniedError("Not authorized: /metrics needs the auth service.")
        try:
            principal = await backend.authenticate(header)
        except SDKError as err:
            return err if err.http_status == 401 else AuthenticationError("Authentication required to read /metrics.")
        try:
            await backend.check_route(principal, "GET", "/metrics")
        except SDKError as err:
            return err if err.http_status == 403 else PermissionDeniedError("Not authorized to read /metrics.")
        return None


def _refusal(err: SDKError) -> tuple[int, dict[str, Any]]:
    return err.http_status, err.to_envelope()
