"""The REST door's twin: a stock Starlette routing of the same catalog, to run the same requests through.

Built from the same `OperationSpec`s, on the same backend contract (`ServedBackend`) with the same error
envelope, but with the framework doing what a framework does: Starlette's `Router` matches the path (the
first route whose path matches, in the order given: most specific template first, as OpenAPI matches),
binds the path parameters, refuses 404 and 405 by raising `HTTPException`, reads the body
(`request.stream()`), parses the query string (`request.query_params`) and renders with `JSONResponse`.
What the framework has no opinion on is written here plainly from docs/rest.md, one request at a time and
without the door's shortcuts: the limits before routing, `OPTIONS`, authentication then tier 1 before the
body, names in snake_case or camelCase, path > query > body, the listing-B answer, the one envelope. Where
Starlette does have an opinion the twin keeps it, except that a route serves only its catalog methods
(Starlette adds `HEAD` to every `GET` route; docs/rest.md: `HEAD` is not served); `test_twin.py` lists the
answers where the two differ on purpose.

The leaf checks are the product's own, not the door's: the strict JSON parser (`_wire.parse_json`), the
strict type check of the parsed body (`_strict.check_body`) and `spec.build`. The door's one-pass strict
build (`_strict.strict_operation`) is not used here, so the comparison checks it too.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic.alias_generators import to_camel
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pluginsdk.constants import VERSION
from pluginsdk.errors import SDKError, TooManyRequestsError, ValidationError
from pluginsdk.operations import CATALOG, OperationSpec
from pluginsdk.operations._base import list_fields
from pluginsdk.principal import Principal
from pluginsdk.server._strict import check_body
from pluginsdk.server._wire import parse_json
from pluginsdk.server.contract import ServedBackend
from pluginsdk.server.limits import (
    BODY_TIMEOUT,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_HEADER_LINE_BYTES,
    MAX_HEADERS,
    MAX_URL_BYTES,
    MethodNotAllowed,
    RouteNotFound,
    body_timed_out,
    headers_too_large,
    too_large,
    uri_too_long,
)

__all__ = ["twin_app"]

OTHER_GET_ROUTES = ("/health", "/openapi.json", "/docs", "/livez", "/readyz", "/metrics")
"""The door's routes outside the catalog (only `/health` is answered here; the others are there for 404/405)."""


def _envelope(err: SDKError, camel: bool = False, headers: dict[str, str] | None = None) -> JSONResponse:
    body = err.to_envelope()
    if camel:
        body["message"] = err.message
    extra = dict(headers or {})
    if isinstance(err, TooManyRequestsError) and err.retry_after is not None:
        extra["Retry-After"] = str(err.retry_after)
    return JSONResponse(body, status_code=err.http_status, headers=extra)


class _Limits:
    """The limits of docs/rest.md's table, before routing: target (414), head (431), declared body (413)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = scope["headers"]
        refusal: SDKError | None = None
        if len(scope.get("raw_path") or scope["path"].encode()) + len(scope["query_string"]) > MAX_URL_BYTES:
            refusal = uri_too_long()
        elif (
            len(headers) > MAX_HEADERS
            or any(len(k) + len(v) > MAX_HEADER_LINE_BYTES for k, v in headers)
            or sum(len(k) + len(v) for k, v in headers) > MAX_HEADER_BYTES
        ):
            refusal = headers_too_large()
        else:
            declared = [v for k, v in headers if k == b"content-length"]
            if declared and declared[-1].isdigit() and int(declared[-1]) > self.max_body_bytes:
                refusal = too_large(self.max_body_bytes)
        if refusal is not None:
            await _envelope(refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _read(request: Request, limit: int, seconds: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                chunks.append(chunk)
    except TimeoutError:
        raise body_timed_out(seconds) from None
    return b"".join(chunks)


def _listing_b(result: Any) -> dict[str, Any]:
    """docs/rest.md, "Listing B": `{"requestId", "message", "status"}`."""
    status = str(result.status)
    request_id = str(result.request_id or "")
    return {"requestId": request_id, "message": f"Request {request_id} {status}.", "status": status}


class _Operation:
    """One catalog operation served at one path, the steps of docs/rest.md written out in order."""

    def __init__(self, spec: OperationSpec, path: str, twin: _Twin) -> None:
        assert spec.rest is not None
        self.spec, self.path, self.twin, self.rest = spec, path, twin, spec.rest
        self.lists = set(list_fields(spec.cls))

    async def __call__(self, request: Request) -> Response:
        camel = self.rest.camel
        try:
            return await self._answer(request)
        except SDKError as err:
            return _envelope(err, camel)

    async def _answer(self, request: Request) -> Response:
        spec, backend = self.spec, self.twin.backend
        takes_body = bool(spec.body_fields)
        path = request.scope["path"]
        raw = await _read(request, self.twin.max_body_bytes, self.twin.body_timeout) if takes_body else b""
        if spec.policy.unauthenticated:
            client = request.scope.get("client")
            principal = Principal(
                user_id="anonymous", auth_method="none", claims={"client": client[0]} if client else {}
            )
        else:
            principal = await backend.authenticate(request.headers.get("authorization"))
            if takes_body:
                await backend.check_route(principal, spec.method, path)
        try:
            op = spec.build(self._input(request, raw))
        except ValidationError:
            if takes_body or spec.policy.unauthenticated:
                raise
            await backend.check_route(principal, spec.method, path)
            raise
        result = await backend.execute(op, principal, route_path=path)
        status = self.rest.status
        if self.rest.dry_run is not None and getattr(op, self.rest.dry_run):
            status = 200
        if (request.method, self.path) == ("POST", "/api/v1/machines/request"):
            return JSONResponse(_listing_b(result), status_code=status)
        dump = getattr(result, "model_dump", None)
        content = dump(mode="json", by_alias=self.rest.camel) if dump is not None else result
        return JSONResponse(content, status_code=status)

    def _input(self, request: Request, raw: bytes) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if raw.strip():
            body = parse_json(raw)
            if self.rest.body_field is not None:
                check_body(self.spec, raw, body)
                data = {self.rest.body_field: body}
            elif isinstance(body, dict):
                check_body(self.spec, raw, body)
                data = dict(body)
            else:
                raise ValidationError(
                    "The request body must be a JSON object.",
                    details={"field": "body", "value": None, "expected": "a JSON object"},
                )
        for name in self.spec.query_fields:
            values = request.query_params.getlist(name) or request.query_params.getlist(to_camel(name))
            if values:
                data[name] = [v for item in values for v in item.split(",") if v] if name in self.lists else values[-1]
        for name, value in request.path_params.items():
            for key in {name, to_camel(name)}:
                if key in data and data.pop(key) != value:
                    raise ValidationError(
                        f"{key} in the body differs from the path.",
                        details={"field": key, "value": None, "expected": "the path's value"},
                    )
            data[name] = value
        given = set(data) | {to_camel(k) for k in data}
        for key, value in self.rest.defaults.items():
            if key not in given and to_camel(key) not in given:
                data[key] = value
        return data


class _Twin:
    def __init__(self, backend: ServedBackend, max_body_bytes: int, body_timeout: float) -> None:
        self.backend, self.max_body_bytes, self.body_timeout = backend, max_body_bytes, body_timeout

    async def health(self, request: Request) -> Response:
        try:
            await self.backend.ping()
        except Exception:
            return JSONResponse({"status": "unavailable", "store": "unreachable"}, status_code=503)
        return JSONResponse({"status": "ok", "store": "ok", "version": VERSION})

    def routes(self) -> list[Route]:
        by_path: dict[str, dict[str, Any]] = {path: {} for path in OTHER_GET_ROUTES}
        for spec in CATALOG.values():
            if spec.rest is not None:
                for path in spec.rest.paths:
                    by_path.setdefault(path, {})[spec.method] = _Operation(spec, path, self)

        def specific_first(path: str) -> list[tuple[int, str]]:
            return [(1 if seg.startswith("{") else 0, seg) for seg in path.split("/")]

        routes = []
        for path in sorted(by_path, key=specific_first):
            methods = by_path[path] or {"GET": self.health if path == "/health" else _not_here}

            async def endpoint(request: Request, methods: dict[str, Any] = methods) -> Response:
                answer: Response = await methods[request.method](request)
                return answer

            route = Route(path, endpoint, methods=list(methods))
            assert route.methods is not None
            route.methods.discard("HEAD")  # docs/rest.md: HEAD is not served
            routes.append(route)
        return routes


async def _not_here(request: Request) -> Response:
    raise AssertionError(f"the twin does not answer {request.url.path}")


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's 404 and 405 as docs/rest.md writes them: the envelope, `Allow` with `OPTIONS`, 204 to it."""
    assert isinstance(exc, HTTPException)
    method, path = request.method, request.scope["path"]
    if exc.status_code == 405:
        assert exc.headers is not None
        allowed = [*sorted(m.strip() for m in exc.headers["Allow"].split(",")), "OPTIONS"]
        allow = ", ".join(allowed)
        if method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": allow})
        err: SDKError = MethodNotAllowed(
            f"{method[:16]} is not served on this path; it is served with {allow}.",
            details={"field": "method", "value": method[:16], "expected": allowed},
        )
        return _envelope(err, headers={"Allow": allow})
    assert exc.status_code == 404, exc
    err = RouteNotFound("No route has this path.", details={"field": "path", "value": path[:200], "expected": None})
    return _envelope(err)


def twin_app(
    backend: ServedBackend, *, max_body_bytes: int = MAX_BODY_BYTES, body_timeout: float = BODY_TIMEOUT
) -> Starlette:
    """The Starlette app serving the catalog on `backend` (started by the caller)."""
    twin = _Twin(backend, max_body_bytes, body_timeout)
    return Starlette(
        routes=twin.routes(),
        middleware=[Middleware(_Limits, max_body_bytes=max_body_bytes)],
        exception_handlers={HTTPException: _http_error},
    )
