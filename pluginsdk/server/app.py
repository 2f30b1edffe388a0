"""The REST server: FastAPI routes derived from the operation catalog, one loop, no per-operation code.

For every spec with a REST binding and every one of its paths, one route: path parameters from the path,
query parameters (GET/DELETE, or `Rest.query`), a JSON body for the rest (or the whole body into
`Rest.body_field`), snake_case or camelCase names, `Rest.defaults` when absent. The caller is authenticated
(except `Policy.unauthenticated` operations), then the engine authorizes and runs the operation. The reply
is the typed result rendered as the spec names it (camelCase for auth-service routes), or the one error
envelope with the error's HTTP status. OpenAPI schemas come from the same models, so what the document
says is what the server returns.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._constants import VERSION
from ..config import Settings
from ..errors import MethodExecutionError, SDKError, ValidationError
from ..operations import CATALOG, OperationSpec
from ..principal import Principal

__all__ = ["create_app"]

log = logging.getLogger("pluginsdk.server")
access_log = logging.getLogger("pluginsdk.access")

ANONYMOUS = Principal(user_id="anonymous", auth_method="none")
_REF = "#/components/schemas/{model}"

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["success", "error", "error_code", "details"],
    "properties": {
        "success": {"type": "boolean", "const": False},
        "error": {"type": "string"},
        "error_code": {"type": "string"},
        "details": {"type": "object"},
        "message": {"type": "string"},
    },
}


def _route_key(path: str) -> list[tuple[int, str]]:
    """Literal segments before parameters at each position (`/requests/status` before `/requests/{id}`)."""
    return [(1 if seg.startswith("{") else 0, seg) for seg in path.strip("/").split("/")]


def _render(result: Any, camel: bool) -> bytes:
    """The result as JSON bytes, in one pass through pydantic's serializer for models."""
    serializer = getattr(type(result), "__pydantic_serializer__", None)
    if serializer is not None:
        data: bytes = serializer.to_json(result, by_alias=camel)
        return data
    return _dumps(result)


def _dumps(value: Any) -> bytes:
    # Starlette's JSONResponse rendering: compact, UTF-8, no NaN
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def _error_body(err: SDKError, camel: bool) -> bytes:
    body = err.to_envelope()
    if camel:
        body["message"] = err.message
    return _dumps(body)


def error_response(err: SDKError, camel: bool, request_id: str) -> JSONResponse:
    body = err.to_envelope()
    if camel:
        body["message"] = err.message
    return JSONResponse(body, status_code=err.http_status, headers={"X-Request-ID": request_id})


_camel = functools.lru_cache(maxsize=4096)(to_camel)


def new_request_id() -> str:
    return os.urandom(16).hex()


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one REST binding needs per request, computed once (names, camelCase keys, list fields)."""

    spec: OperationSpec
    camel: bool
    status: int
    query: tuple[tuple[str, tuple[str, str], bool], ...]
    """(field, (snake key, camel key), is a list)."""
    defaults: tuple[tuple[str, Any], ...]
    body_field: str | None
    reads_body: bool

    @classmethod
    def of(cls, spec: OperationSpec) -> _Plan:
        from ..operations._base import _list_fields

        assert spec.rest is not None
        lists = set(_list_fields(spec.cls))
        return cls(
            spec=spec,
            camel=spec.rest.camel,
            status=spec.rest.status,
            query=tuple((n, (n, to_camel(n)), n in lists) for n in spec.query_fields),
            defaults=tuple(spec.rest.defaults.items()),
            body_field=spec.rest.body_field,
            reads_body=bool(spec.body_fields),
        )

    def gather(self, path_params: dict[str, str], query_string: bytes, raw: bytes | None) -> dict[str, Any]:
        """Path > query > body, each under its snake_case or camelCase name."""
        data: dict[str, Any] = {}
        if self.reads_body and raw is not None and raw.strip():
            try:
                body = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"The request body is not valid JSON: {exc.msg}.",
                    details={"field": "body", "value": None, "expected": "a JSON object"},
                ) from None
            except UnicodeDecodeError:
                raise ValidationError(
                    "The request body is not valid JSON: it is not UTF-8.",
                    details={"field": "body", "value": None, "expected": "a JSON object"},
                ) from None
            if self.body_field is not None:
                data[self.body_field] = body
            elif isinstance(body, dict):
                data.update(body)
            else:
                raise ValidationError(
                    "The request body must be a JSON object.",
                    details={"field": "body", "value": None, "expected": "a JSON object"},
                )
        if query_string and self.query:
            params: dict[str, list[str]] = {}
            for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
                params.setdefault(key, []).append(value)
            for name, keys, is_list in self.query:
                for key in keys:
                    values = params.get(key)
                    if values is not None:
                        if is_list:
                            data[name] = [v for item in values for v in item.split(",") if v != ""]
                        else:
                            data[name] = values[-1]
                        break
        data.update(path_params)
        if self.defaults:
            given = {k for k in data} | {_camel(k) for k in data}
            for key, value in self.defaults:
                if key not in given:
                    data[key] = value
        return data

    async def run(
        self,
        engine: Any,
        authorization: str | None,
        path_params: dict[str, str],
        query_string: bytes,
        raw: bytes | None,
        *,
        route_path: str | None = None,
    ) -> tuple[int, bytes, str | None]:
        """Authenticate, build, execute (tier 1 on `route_path`, the path called), render: (status, JSON body,
        user id or None)."""
        spec = self.spec
        user: str | None = None
        try:
            if spec.policy.unauthenticated:
                principal = ANONYMOUS
            else:
                principal = await engine.authz.authenticate(authorization)
            user = principal.user_id
            op = spec.build(self.gather(path_params, query_string, raw))
            result = await engine.execute(op, principal, route_path=route_path)
        except SDKError as err:
            return err.http_status, _error_body(err, self.camel), user
        return self.status, _render(result, self.camel), user


def _route_path(scope: Scope) -> str:
    """The path as routed (without a proxy's `root_path` prefix): what tier 1 authorizes."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _json_headers(body: bytes, request_id: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-length", str(len(body)).encode()),
        (b"content-type", b"application/json"),
        (b"x-request-id", request_id.encode("latin-1")),
    ]


def _endpoint(spec: OperationSpec) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of a binding (what the OpenAPI document describes; the served fast path in
    `PluginApp` runs the same `_Plan.run`)."""
    plan = _Plan.of(spec)

    async def endpoint(request: Request) -> Response:
        raw = await request.body() if plan.reads_body else None
        status, body, user = await plan.run(
            request.app.state.engine,
            request.headers.get("authorization"),
            request.path_params,
            request.scope.get("query_string", b""),
            raw,
            route_path=_route_path(request.scope),
        )
        request.state.user = user
        return Response(
            body, status_code=status, headers={"X-Request-ID": request.state.request_id}, media_type="application/json"
        )

    endpoint.__name__ = spec.name
    return endpoint


class _Schemas:
    """Collects JSON schemas of models into OpenAPI components (pydantic `$defs` moved to components)."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = {"ErrorEnvelope": ERROR_SCHEMA}

    def output(self, model: type[Any], camel: bool) -> dict[str, Any]:
        suffix = "Camel" if camel else ""
        schema: dict[str, Any] = model.model_json_schema(
            by_alias=camel, mode="serialization", ref_template=_REF.replace("{model}", "{model}" + suffix)
        )
        return self._hoist(schema, suffix, model.__name__)

    def input(self, spec: OperationSpec) -> dict[str, Any]:
        spec.field_docs()
        schema: dict[str, Any] = spec.cls.model_json_schema(
            by_alias=False, mode="validation", ref_template=_REF.replace("{model}", "{model}Input")
        )
        schema.pop("title", None)
        return self._hoist(schema, "Input", None)

    def _hoist(self, schema: dict[str, Any], suffix: str, name: str | None) -> dict[str, Any]:
        for def_name, definition in schema.pop("$defs", {}).items():
            self.components[def_name + suffix] = definition
        if name is None:
            return schema
        self.components[name + suffix] = schema
        return {"$ref": _REF.format(model=name + suffix)}


def _openapi_extra(spec: OperationSpec, schemas: _Schemas) -> dict[str, Any]:
    assert spec.rest is not None
    full = schemas.input(spec)
    props: dict[str, Any] = full.get("properties", {})
    required = set(full.get("required", []))
    params = [
        {
            "name": n,
            "in": "path",
            "required": True,
            "schema": {"type": "string"},
            "description": props[n].get("description", ""),
        }
        for n in spec.path_fields
    ]
    for n in spec.query_fields:
        prop = dict(props.get(n, {}))
        description = prop.pop("description", "")
        params.append({"name": n, "in": "query", "required": False, "schema": prop, "description": description})
    extra: dict[str, Any] = {"parameters": params}
    if spec.body_fields:
        if spec.rest.body_field is not None:
            body_schema = props.get(spec.rest.body_field, {"type": "object"})
        else:
            body_schema = {
                "type": "object",
                "properties": {n: props[n] for n in spec.body_fields if n in props},
                "required": [n for n in spec.body_fields if n in required],
                "additionalProperties": False,  # operations reject unknown fields (400)
            }
        extra["requestBody"] = {
            "required": bool(required & set(spec.body_fields)),
            "content": {"application/json": {"schema": body_schema}},
        }
    result = schemas.output(spec.result_type, spec.rest.camel)
    error = {"$ref": _REF.format(model="ErrorEnvelope")}
    extra["responses"] = {
        str(spec.rest.status): {"description": spec.summary, "content": {"application/json": {"schema": result}}},
        **{
            code: {"description": why, "content": {"application/json": {"schema": error}}}
            for code, why in (
                ("400", "Invalid input"),
                ("401", "Missing or invalid credentials"),
                ("403", "Not authorized"),
                ("404", "Not found"),
                ("409", "Conflict"),
                ("500", "Internal error"),
                ("502", "Provider error"),
            )
        },
    }
    return extra


class _Dispatch:
    """Exact-match table of the catalog routes, in the router's order: (method, path) -> plan and path
    parameters, with Starlette's semantics for `{name}` (one non-empty segment). Anything it does not
    match (HEAD, unknown paths, wrong methods, a root_path) goes through the FastAPI/Starlette stack."""

    _CACHE_MAX = 4096

    def __init__(self, entries: list[tuple[str, str, _Plan]]) -> None:
        self._by_len: dict[int, list[tuple[str, tuple[tuple[int, str], ...], _Plan]]] = {}
        for method, path, plan in entries:
            segments = path.split("/")
            pattern = tuple(
                (1, seg[1:-1]) if seg.startswith("{") and seg.endswith("}") else (0, seg) for seg in segments
            )
            self._by_len.setdefault(len(segments), []).append((method, pattern, plan))
        self._cache: dict[tuple[str, str], tuple[_Plan, dict[str, str]] | None] = {}

    def match(self, method: str, path: str) -> tuple[_Plan, dict[str, str]] | None:
        key = (method, path)
        hit = self._cache.get(key, False)
        if hit is not False:
            return hit  # type: ignore[return-value]
        found = self._match(method, path)
        if len(self._cache) >= self._CACHE_MAX:
            self._cache.clear()
        self._cache[key] = found
        return found

    def _match(self, method: str, path: str) -> tuple[_Plan, dict[str, str]] | None:
        segments = path.split("/")
        for route_method, pattern, plan in self._by_len.get(len(segments), ()):
            if route_method != method:
                continue
            params: dict[str, str] = {}
            for (is_param, text), seg in zip(pattern, segments, strict=True):
                if is_param:
                    if not seg:
                        break
                    params[text] = seg
                elif seg != text:
                    break
            else:
                return plan, params
        return None


class PluginApp(FastAPI):
    """The FastAPI application (OpenAPI document, docs, /health, error pages) with the catalog routes
    served on a direct path: one lookup, no middleware or Request objects, two ASGI messages out.
    Request id, access log and the last-resort 500 envelope behave as `RequestContext` does."""

    dispatch: _Dispatch | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.dispatch is not None and not scope.get("root_path"):
            hit = self.dispatch.match(scope["method"], scope["path"])
            if hit is not None:
                await self._serve(hit[0], hit[1], scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def _serve(self, plan: _Plan, params: dict[str, str], scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request_id = ""
        authorization: str | None = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                if authorization is None:
                    authorization = value.decode("latin-1")
            elif name == b"x-request-id" and not request_id:
                request_id = value.decode("latin-1")[:128]
        request_id = request_id or new_request_id()
        status, user, sent = 500, None, False
        try:
            raw: bytes | None = None
            if plan.reads_body:
                chunks = []
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return  # the client went away: nothing to answer
                    chunks.append(message.get("body", b""))
                    if not message.get("more_body", False):
                        break
                raw = b"".join(chunks)
            status, body, user = await plan.run(
                self.state.engine, authorization, params, scope.get("query_string", b""), raw, route_path=scope["path"]
            )
            sent = True
            await send({"type": "http.response.start", "status": status, "headers": _json_headers(body, request_id)})
            await send({"type": "http.response.body", "body": body})
        except Exception:  # never leak internals: one envelope, logged with its request id
            log.exception("unhandled error (request %s)", request_id)
            status = 500
            if not sent:
                body = _error_body(MethodExecutionError("Internal server error."), False)
                await send({"type": "http.response.start", "status": 500, "headers": _json_headers(body, request_id)})
                await send({"type": "http.response.body", "body": body})
        finally:
            if access_log.isEnabledFor(logging.INFO):
                _access(request_id, scope, status, started, user)


def _access(request_id: str, scope: Scope, status: int, started: float, user: str | None) -> None:
    access_log.info(
        json.dumps(
            {
                "request_id": request_id,
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 2),
                "user": user,
            }
        )
    )


def create_app(engine_or_settings: Any) -> FastAPI:
    """The app serving every catalog operation. Give it a started Engine, or Settings (the app starts one)."""
    from backends.local.engine import Engine

    owned: Engine | None = None
    if isinstance(engine_or_settings, Settings):
        owned = Engine(engine_or_settings, background=True)
        engine: Engine = owned
    else:
        engine = engine_or_settings

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if owned is not None:
            await owned.start()
        try:
            yield
        finally:
            if owned is not None:
                await owned.aclose()

    app = PluginApp(
        title="pluginsdk",
        version=VERSION,
        description="Machine provisioning and the auth service, derived from the pluginsdk operation catalog.",
        lifespan=lifespan,
        openapi_url="/openapi.json",
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.engine = engine
    schemas = _Schemas()

    # Serving routes are plain Starlette routes (our endpoints take the Request and return a Response, so
    # FastAPI's per-request parameter machinery would only add cost); the OpenAPI document is generated
    # from APIRoute objects built from the same specs but never mounted.
    doc_routes: list[APIRoute] = []
    served: list[tuple[str, str, _Plan]] = []
    routes = [(path, spec) for spec in CATALOG.values() if spec.rest for path in spec.rest.paths]
    for path, spec in sorted(routes, key=lambda r: (_route_key(r[0]), r[1].name)):
        assert spec.rest is not None
        endpoint = _endpoint(spec)
        served.append((spec.rest.method, path, _Plan.of(spec)))
        alt = path != spec.rest.path
        app.router.routes.append(
            Route(path, endpoint, methods=[spec.rest.method], name=f"{spec.name}_alt" if alt else spec.name)
        )
        doc_routes.append(
            APIRoute(
                path,
                endpoint,
                methods=[spec.rest.method],
                status_code=spec.rest.status,
                name=spec.name,
                operation_id=f"{spec.name}_{len(path)}" if alt else spec.name,
                summary=spec.summary,
                description=spec.description,
                tags=[spec.category],
                response_model=None,
                openapi_extra=_openapi_extra(spec, schemas),
            )
        )

    async def health(request: Request) -> Response:
        try:
            await request.app.state.engine.db.db.fetchone("SELECT 1 AS ok")
        except Exception:
            return JSONResponse({"status": "unavailable", "store": "unreachable"}, status_code=503)
        return JSONResponse({"status": "ok", "store": "ok", "version": VERSION})

    app.router.routes.append(Route("/health", health, methods=["GET"], name="health"))
    doc_routes.append(APIRoute("/health", health, methods=["GET"], summary="Liveness and readiness", tags=["system"]))
    app.add_middleware(RequestContext)
    app.dispatch = _Dispatch(served)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=doc_routes)
            doc.setdefault("components", {}).setdefault("schemas", {}).update(schemas.components)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


class RequestContext:
    """Pure ASGI middleware: request id (incoming X-Request-ID or a new one), access log line, and a 500
    envelope for anything unhandled. (Starlette's BaseHTTPMiddleware costs a task and a stream per request.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = ""
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                request_id = value.decode("latin-1")[:128]
                break
        request_id = request_id or new_request_id()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        state["user"] = None
        started = time.perf_counter()
        status = 500
        sent = False
        header = (b"x-request-id", request_id.encode("latin-1"))

        async def send_with_id(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
                sent = True
                headers = [h for h in message.get("headers", []) if h[0] != b"x-request-id"]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:  # never leak internals: one envelope, logged with its request id
            log.exception("unhandled error (request %s)", request_id)
            if not sent:
                await error_response(MethodExecutionError("Internal server error."), False, request_id)(
                    scope, receive, send_with_id
                )
        if access_log.isEnabledFor(logging.INFO):
            _access(request_id, scope, status, started, state.get("user"))
