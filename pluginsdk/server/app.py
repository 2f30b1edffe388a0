"""The REST server: one request path for every route, derived from the operation catalog.

`PluginApp` is a plain ASGI app. Every request goes through `PluginApp.__call__`, which writes the request
id, the access log line and the last-resort 500 envelope once, and applies the limits (`limits.py`) before
any work: request target and head (414/431), declared body size (413), then the router (404, 405 with
`Allow`, `OPTIONS`). A catalog route is a `_Plan`, whose `respond` runs its named steps in order:
`receive_body` (413, 408; before authentication), `admit` (401 unless `Policy.unauthenticated`; for a route
that takes a body, tier 1 on the concrete path before the body is parsed: 403 before 400), `operation`
(strict JSON, the JSON types the document states (`_strict.py`), path > query > body, built: 400; on a
route without a body `deny_first` checks tier 1 before that 400), `backend.execute` with `route_path=`
(tier 1 and 2, then the handler), `answer` (the typed result rendered as the spec names it, camelCase for
auth-service routes). A refusal at any step is the one error envelope with the error's status.
`tests/server/test_twin.py` runs the same requests through a stock Starlette routing of the catalog and
compares the answers byte for byte.

The server reaches the engine only through the backend (`contract.ServedBackend`); FastAPI is used for
the OpenAPI document only (`_openapi.py`); /docs is Swagger UI served from a package (`_docs.py`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from pydantic.alias_generators import to_camel
from starlette.types import Receive, Scope, Send

from ..config import Settings
from ..constants import VERSION
from ..errors import MethodExecutionError, SDKError, TooManyRequestsError, ValidationError
from ..logs import new_request_id
from ..logs import request_id as log_request_id
from ..models.detached import detached
from ..operations import CATALOG, Operation, OperationSpec
from ..principal import Principal
from . import remote_mcp
from ._cors import Cors
from ._docs import docs_routes
from ._endpoint import JSON_TYPE, Endpoint, Reply, dumps, error_body
from ._openapi import build_document, listing_b_created, route_key
from ._routes import Router
from ._strict import check_body, strict_operation
from ._wire import ClientGone, check_limits, parse_text, read_body
from .contract import ServedBackend
from .limits import (
    BODY_TIMEOUT,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_HEADER_LINE_BYTES,
    MAX_HEADERS,
    MAX_URL_BYTES,
    MethodNotAllowed,
    RouteNotFound,
    headers_too_large,
    too_large,
    uri_too_long,
)

__all__ = ["PluginApp", "create_app", "error_body"]

log = logging.getLogger("pluginsdk.server")
access_log = logging.getLogger("pluginsdk.access")

ANONYMOUS = Principal(user_id="anonymous", auth_method="none")
TITLE = "pluginsdk"
DESCRIPTION = "Machine provisioning and the auth service, derived from the pluginsdk operation catalog."

_ABSENT: Any = object()
"""No body was sent (JSON `null` is a body, and not an object)."""
_camel = functools.lru_cache(maxsize=4096)(to_camel)
_NO_PARAMS: dict[str, str] = {}
_KEPT_OPERATIONS = 1024
"""Operations a plan keeps at most (`_Plan.operation`); all dropped when it is full."""
_OWN_JSON: dict[type, Any] = {}
"""Result type -> its `to_json_bytes`, or None."""


def _render(result: Any, camel: bool) -> bytes:
    """The result as JSON bytes, in one pass through pydantic's serializer for models; a result type that writes
    its own JSON (`to_json_bytes`, the same bytes faster) writes it."""
    kind = type(result)
    own = _OWN_JSON.get(kind, _ABSENT)
    if own is _ABSENT:  # looked up once per type: a missing class attribute goes through pydantic's __getattr__
        own = _OWN_JSON[kind] = getattr(kind, "to_json_bytes", None)
    if own is not None:
        written: bytes = own(result, camel)
        return written
    serializer = getattr(kind, "__pydantic_serializer__", None)
    if serializer is not None:
        data: bytes = serializer.to_json(result, by_alias=camel)
        return data
    return dumps(result)


class Head:
    """What the door read from the request head (one pass over the headers), for itself and the endpoints."""

    __slots__ = (
        "authorization",
        "client",
        "declared",
        "headers",
        "origin",
        "oversized",
        "path",
        "query_string",
        "request_id",
        "retry_after",
        "sent",
        "streamed",
    )

    def __init__(self, scope: Scope) -> None:
        authorization: str | None = None
        request_id = ""
        declared: bytes | None = None
        origin: bytes | None = None
        head_bytes = 0
        too_big = streamed = False
        headers = scope["headers"]
        for name, value in headers:
            size = len(name) + len(value)
            head_bytes += size
            too_big |= size > MAX_HEADER_LINE_BYTES
            if name == b"authorization":
                if authorization is None:
                    authorization = value.decode("latin-1")
            elif name == b"x-request-id":
                if not request_id:
                    request_id = value.decode("latin-1")[:128]
            elif name == b"content-length":
                declared = value
            elif name == b"transfer-encoding":
                streamed = True
            elif name == b"origin":
                origin = value
        self.authorization = authorization
        self.headers: list[tuple[bytes, bytes]] = headers
        self.origin = origin
        """The `Origin` header (a browser's cross-origin call), for CORS."""
        self.request_id = request_id or new_request_id()
        self.declared = declared
        self.streamed = streamed
        self.oversized = too_big or len(headers) > MAX_HEADERS or head_bytes > MAX_HEADER_BYTES
        path: str = scope["path"]
        root = scope.get("root_path")
        if root and path.startswith(root):
            path = path[len(root) :]
        self.path = path
        self.query_string: bytes = scope.get("query_string", b"")
        self.sent = False
        """The response has started (a failure after that cannot send the 500 envelope)."""
        peer = scope.get("client")
        self.client: str | None = peer[0] if peer else None
        """The peer's address, None when the server does not say (the sign-in limits count failures per
        client; /metrics may be for loopback clients only)."""
        self.retry_after: int | None = None
        """Seconds for the `Retry-After` header of a throttled answer."""

    def drops_body(self, endpoint: Endpoint | None) -> bool:
        """A body came (or may come) that this answer does not read: the connection must close after it."""
        sent = self.streamed or (self.declared is not None and self.declared != b"0")
        return sent and not (isinstance(endpoint, _Plan) and endpoint.reads_body)


_Routed = tuple["Endpoint | None", dict[str, str], SDKError | None, list[tuple[bytes, bytes]]]
"""(endpoint, path parameters, refusal, extra response headers): what the door decided before any work."""


@dataclass(frozen=True, slots=True, eq=False)
class _Plan(Endpoint):
    """One REST binding of a catalog operation, with what it needs per request computed once."""

    spec: OperationSpec
    method: str
    camel: bool
    status: int
    query: tuple[tuple[str, tuple[str, str], bool], ...]
    """(field, (snake key, camel key), is a list)."""
    defaults: tuple[tuple[str, Any], ...]
    body_field: str | None
    reads_body: bool
    public: bool
    route: str
    dry_run: str | None
    """The flag that makes a create store nothing (answered 200, not `status`)."""
    reshape: Callable[[Any], dict[str, Any]] | None = None
    """The answer's shape where a route listing writes it differently (listing B's `requestId`, `message`)."""
    keeps: bool = False
    """A query built from its path alone, with no field made when built (a default factory): the same path
    builds the same operation, so it is built once (`kept`) and each request gets its own copy."""
    kept: dict[tuple[str, ...], Operation[Any]] = field(default_factory=dict)
    bounded: bool = False
    """The operation's own checks bound every value of its body (`Operation.bounds_own_input`)."""

    @classmethod
    def of(cls, spec: OperationSpec, path: str) -> _Plan:
        from ..operations._base import list_fields

        assert spec.rest is not None
        lists = set(list_fields(spec.cls))
        return cls(
            spec=spec,
            method=spec.method,
            camel=spec.rest.camel,
            status=spec.rest.status,
            query=tuple((n, (n, to_camel(n)), n in lists) for n in spec.query_fields),
            defaults=tuple(spec.rest.defaults.items()),
            body_field=spec.rest.body_field,
            reads_body=bool(spec.body_fields),
            public=spec.policy.unauthenticated,
            route=path,
            dry_run=spec.rest.dry_run,
            reshape=listing_b_created if path in spec.rest.listing_b else None,
            keeps=spec.kind == "query"
            and not spec.body_fields
            and all(f.default_factory is None for f in spec.cls.model_fields.values()),
            bounded=spec.cls.bounds_own_input and not spec.cls.ignored_fields,
        )

    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        """The steps in the order docs/rest.md gives them; the first refusal is the answer, in the envelope."""
        backend = app.backend
        user: str | None = None
        try:
            raw = await self.receive_body(app, receive) if self.reads_body else None
            principal = await self.admit(backend, head)
            if not self.public:
                user = principal.user_id
            try:
                op = self.operation(raw, params, head.query_string)
            except ValidationError:
                await self.deny_first(backend, principal, head.path)
                raise
            result = await backend.execute(op, principal, route_path=head.path, route_checked=self.reads_body)
        except SDKError as err:
            return _refused(head, err), error_body(err, self.camel), user
        status, body = self.answer(op, result)
        return status, body, user

    async def receive_body(self, app: PluginApp, receive: Receive) -> bytes:
        """Step 1, the whole body within `api.max_body_bytes` (413) and `api.body_timeout` (408). First, before
        authentication: the limits hold whoever sends the body, and a body read in full leaves the connection
        usable for the next request (a refusal of an unread body has to close it)."""
        return await read_body(receive, app.max_body_bytes, app.body_timeout)

    async def admit(self, backend: ServedBackend, head: Head) -> Principal:
        """Step 2, the caller: authenticated (401) unless the operation is public, and for a route that takes a
        body, tier 1 on the concrete path (403) before the body is parsed, so a denied caller learns nothing
        from a 400 about its body."""
        if self.public:
            return _anonymous(head.client)
        principal = await backend.authenticate(head.authorization)
        if self.reads_body:
            await backend.check_route(principal, self.method, head.path)
        return principal

    def operation(self, raw: bytes | None, params: dict[str, str], query_string: bytes) -> Operation[Any]:
        """Step 3, the operation from the request (400): strict JSON (`_wire`), the body's JSON types as the
        document states them (`_strict`), then path > query > body gathered and built. Where the body is the
        whole input, the type check and the build are one strict pass (`_strict.strict_operation`), before the
        body's depth and numbers are walked where the operation's own checks bound them (`bounded`: a body it
        refuses is walked then, so the refusal is the same); where the path is (`keeps`), the operation is built
        once per path and copied (`_kept`)."""
        if self.keeps and not query_string:
            return self._kept(params)
        body: Any = _ABSENT
        if raw is not None and raw.strip():
            body = parse_text(raw)
            whole = self._whole(body, params, query_string)
            if whole and self.bounded:
                op = strict_operation(self.spec, body)
                if op is not None:
                    return op
            check_limits(body)
            op = self._checked(raw, body, strict=whole and not self.bounded)
            if op is not None:
                return op
        return self.spec.build(self.gather(params, query_string, body))

    def _kept(self, params: dict[str, str]) -> Operation[Any]:
        """The operation of these path parameters, built once (a refusal is never kept); a copy for the caller."""
        key = tuple(params.values())
        op = self.kept.get(key)
        if op is None:
            op = self.spec.build(self.gather(params, b"", _ABSENT))
            if len(self.kept) >= _KEPT_OPERATIONS:
                self.kept.clear()
            self.kept[key] = op
        return detached(op)

    async def deny_first(self, backend: ServedBackend, principal: Principal, path: str) -> None:
        """Before a 400 about path or query input, tier 1 (403): a route without a body is authorized by
        `execute`, which an invalid input never reaches, so a denied caller still gets 403 before 400."""
        if not self.public and not self.reads_body:
            await backend.check_route(principal, self.method, path)

    def answer(self, op: Operation[Any], result: Any) -> tuple[int, bytes]:
        """Step 5 (step 4 is `backend.execute`: tier 1 and 2, then the handler): the binding's status (200 for a
        create that stored nothing) and the result rendered as the spec names it, straight to bytes."""
        status = 200 if self.dry_run is not None and getattr(op, self.dry_run) else self.status
        if self.reshape is not None:
            return status, dumps(self.reshape(result))
        return status, _render(result, self.camel)

    def _whole(self, body: Any, params: dict[str, str], query_string: bytes) -> bool:
        """Whether the parsed body is the operation's whole input: an object, with nothing from the path, the
        query or a REST default."""
        return (
            self.body_field is None
            and isinstance(body, dict)
            and not (params or self.defaults or (query_string and self.query))
        )

    def _checked(self, raw: bytes, body: Any, *, strict: bool) -> Operation[Any] | None:
        """A parsed body's JSON types checked as the document states them; with `strict` (the body is the whole
        input) the operation itself where one strict pass builds it (`_strict.strict_operation`), else None
        (to build)."""
        if self.body_field is not None:
            check_body(self.spec, raw, body)
        elif isinstance(body, dict):
            if strict:
                op = strict_operation(self.spec, body)
                if op is not None:
                    return op
            check_body(self.spec, raw, body)
        return None

    def gather(self, path_params: dict[str, str], query_string: bytes, body: Any) -> dict[str, Any]:
        """Path > query > body, each under its snake_case or camelCase name."""
        data = self._from_body(body)
        if query_string and self.query:
            self._add_query(data, query_string)
        if path_params:
            _add_path(data, path_params)
        if self.defaults:
            self._add_defaults(data)
        return data

    def _from_body(self, body: Any) -> dict[str, Any]:
        if body is _ABSENT:
            return {}
        if self.body_field is not None:
            return {self.body_field: body}
        if isinstance(body, dict):
            return dict(body)
        raise ValidationError(
            "The request body must be a JSON object.",
            details={"field": "body", "value": None, "expected": "a JSON object"},
        )

    def _add_query(self, data: dict[str, Any], query_string: bytes) -> None:
        params: dict[str, list[str]] = {}
        for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
            params.setdefault(key, []).append(value)
        for name, keys, is_list in self.query:
            values = params.get(keys[0])
            if values is None:
                values = params.get(keys[1])
            if values is None:
                continue
            data[name] = [v for item in values for v in item.split(",") if v != ""] if is_list else values[-1]

    def _add_defaults(self, data: dict[str, Any]) -> None:
        given = {k for k in data} | {_camel(k) for k in data}
        for key, value in self.defaults:
            if key not in given and _camel(key) not in given:
                data[key] = value


@functools.lru_cache(maxsize=1024)
def _anonymous(client: str | None) -> Principal:
    """The unauthenticated caller at this address (sign-in limits count per client)."""
    if client is None:
        return ANONYMOUS
    return Principal(user_id="anonymous", auth_method="none", claims={"client": client})


def _refused(head: Head, err: SDKError) -> int:
    """The status of an error answer; a throttled one also sets the `Retry-After` header."""
    if isinstance(err, TooManyRequestsError):
        head.retry_after = err.retry_after
    return err.http_status


def _add_path(data: dict[str, Any], path_params: dict[str, str]) -> None:
    """The path's parameters; a body may repeat its path id (VAMS: constraintId), not change it."""
    for name, value in path_params.items():
        for key in {name, _camel(name)}:
            if key in data and data.pop(key) != value:
                raise ValidationError(
                    f"{key} in the body differs from the path.",
                    details={"field": key, "value": None, "expected": "the path's value"},
                )
    data.update(path_params)


class _Static(Endpoint):
    """A fixed JSON document, built on first use (the OpenAPI document)."""

    def __init__(self, route: str, build: Callable[[], bytes], content_type: bytes = JSON_TYPE) -> None:
        self.route = route
        self._build = build
        self.content_type = content_type
        self._body: bytes | None = None

    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        if self._body is None:
            self._body = self._build()
        return 200, self._body, None


class _Health(Endpoint):
    route = "/health"

    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        try:
            await app.backend.ping()
        except Exception:
            return 503, dumps({"status": "unavailable", "store": "unreachable"}), None
        return 200, dumps({"status": "ok", "store": "ok", "version": VERSION}), None


class PluginApp:
    """The ASGI app: one door for every request (see the module docstring)."""

    def __init__(
        self,
        backend: ServedBackend,
        *,
        owned: bool,
        max_body_bytes: int,
        body_timeout: float = BODY_TIMEOUT,
        metrics_access: str = "loopback",
    ) -> None:
        from .ops import OPERATOR_ROUTES

        self.backend = backend
        self.owned = owned
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        """Seconds a body has to arrive in full (`api.body_timeout`; 408 past it)."""
        self.metrics: Any = None
        """The server's instruments (`metrics.Metrics`) once `pluginsdk.server.operator_app` installed them."""
        self.metrics_access = metrics_access
        """Who may read /metrics (`api.metrics`)."""
        self.cors: Cors | None = None
        """The browser origins allowed to call the API (`api.cors`); None: no CORS header at all."""
        self.title, self.version, self.description = TITLE, VERSION, DESCRIPTION
        self._openapi: dict[str, Any] | None = None
        entries: list[tuple[str, str, Endpoint]] = []
        routes = [(path, spec) for spec in CATALOG.values() if spec.rest for path in spec.rest.paths]
        for path, spec in sorted(routes, key=lambda r: (route_key(r[0]), r[1].name)):
            assert spec.rest is not None
            entries.append((spec.rest.method, path, _Plan.of(spec, path)))
        entries.append(("GET", "/health", _Health()))
        entries.append(("GET", "/openapi.json", _Static("/openapi.json", lambda: dumps(self.openapi()))))
        entries.extend(docs_routes(self.title))
        entries.extend((method, path, endpoint()) for method, path, endpoint in OPERATOR_ROUTES)
        self.router: Router[Endpoint] = Router(entries)
        self.observe: Callable[[str, str, int, float], None] | None = None
        """Called with (route template, method, status, seconds) after each request (the server's metrics)."""
        from .console import Console

        self.console = Console(backend)
        """The web console: every request under /ui (`console/`)."""
        self._remote_mcp: Any = None
        self._side_heads, self._side_doors = self._build_side_doors()

    @property
    def remote_mcp(self) -> Any:
        """MCP over HTTP and its OAuth endpoints (`remote_mcp/`), unless `mcp.http` is off or `mcp` is missing."""
        return self._remote_mcp

    @remote_mcp.setter
    def remote_mcp(self, value: Any) -> None:
        self._remote_mcp = value
        self._side_heads, self._side_doors = self._build_side_doors()

    def _build_side_doors(self) -> tuple[frozenset[str], Any]:
        """The side doors as Starlette routes: the console mounted at /ui, the remote MCP transport's paths (when
        it is on); and the first path segments they own. Only a request whose first segment is one of those goes
        through this router (its unmatched paths to the REST door); `/api/v1` never does."""
        from starlette.responses import RedirectResponse
        from starlette.routing import Mount, Route
        from starlette.routing import Router as StarletteRouter

        async def to_slash(request: Any) -> Any:
            return RedirectResponse("/ui/", status_code=308)

        routes: list[Any] = [Route("/ui", to_slash), Mount("/ui", app=self.console)]
        heads = {"ui"}
        if self._remote_mcp is not None:
            door = _McpDoor(self._remote_mcp, self._http)
            routes.extend(Route(path, door) for path in sorted(remote_mcp.PATHS))
            routes.append(Route("/.well-known/{rest:path}", door))
            heads |= {path.split("/")[1] for path in remote_mcp.PATHS} | {".well-known"}
        return frozenset(heads), StarletteRouter(routes, redirect_slashes=False, default=self._http)

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document (built once)."""
        if self._openapi is None:
            self._openapi = build_document(self.title, self.version, self.description)
        return self._openapi

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            path: str = scope["path"]
            if path[1:].partition("/")[0] in self._side_heads:  # /ui, /mcp and its OAuth paths: Starlette routes
                await self._side_doors(scope, receive, send)
                return
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await _refuse_websocket(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    if self.owned:
                        await self.backend.start()
                except Exception as exc:
                    log.exception("the backend did not start")
                    await send({"type": "lifespan.startup.failed", "message": type(exc).__name__})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                try:
                    if self.remote_mcp is not None:
                        await self.remote_mcp.aclose()
                    if self.owned:
                        await self.backend.aclose()
                finally:
                    await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Every HTTP request: its id set as the log context, limits and router, the endpoint's answer (or
        the one envelope), then the access log line and the request metrics."""
        started = time.perf_counter()
        head = Head(scope)
        token = log_request_id.set(head.request_id)
        status, user, route = 500, None, "other"
        try:
            routed = self._route(scope["method"], head, scope)
            endpoint = routed[0]
            # the route template the metrics label: the endpoint's, else the path's (refused before routing,
            # OPTIONS, 405), else "other" (no route: no label per scanned path)
            route = endpoint.route if endpoint is not None else self.router.template(head.path) or route
            status, user = await self._reply(head, routed, receive, send)
        except ClientGone:
            status = 499  # the client went away before its body arrived: no one to answer
        except Exception:  # never leak internals: one envelope, logged with its request id
            log.exception("unhandled error (request %s)", head.request_id)
            status = 500
            if not head.sent:
                body = error_body(MethodExecutionError("Internal server error."))
                await send({"type": "http.response.start", "status": 500, "headers": _headers(body, head, [])})
                await send({"type": "http.response.body", "body": body})
        finally:
            if access_log.isEnabledFor(logging.INFO):
                _access(head.request_id, scope, status, started, user)
            log_request_id.reset(token)
            if self.observe is not None:
                self.observe(route, scope["method"], status, time.perf_counter() - started)

    def _route(self, method: str, head: Head, scope: Scope) -> _Routed:
        """The limits on the head, then the router: (endpoint, path parameters, refusal, extra headers)."""
        if len(scope.get("raw_path") or head.path.encode()) + len(head.query_string) > MAX_URL_BYTES:
            return None, _NO_PARAMS, uri_too_long(), []
        if head.oversized:
            return None, _NO_PARAMS, headers_too_large(), []
        if head.declared is not None and _declared_size(head.declared) > self.max_body_bytes:
            return None, _NO_PARAMS, too_large(self.max_body_bytes), []  # before authentication, before any read
        hit = self.router.match(method, head.path)
        if hit is not None:
            return hit[0], hit[1], None, []
        allowed = self.router.allowed(head.path)
        if not allowed:
            details = {"field": "path", "value": head.path[:200], "expected": None}
            return None, _NO_PARAMS, RouteNotFound("No route has this path.", details=details), []
        allow = ", ".join([*allowed, "OPTIONS"])
        extra = [(b"allow", allow.encode())]
        if method == "OPTIONS":
            return None, _NO_PARAMS, None, extra
        return (
            None,
            _NO_PARAMS,
            MethodNotAllowed(
                f"{method[:16]} is not served on this path; it is served with {allow}.",
                details={"field": "method", "value": method[:16], "expected": [*allowed, "OPTIONS"]},
            ),
            extra,
        )

    async def _reply(self, head: Head, routed: _Routed, receive: Receive, send: Send) -> tuple[int, str | None]:
        """Answer (the endpoint's reply, the refusal, or 204 to OPTIONS) and send it; (status, user id)."""
        endpoint, params, err, extra = routed
        user: str | None = None
        ctype = JSON_TYPE
        origin = head.origin or b""
        cors = self.cors if head.origin is not None else None  # a browser's cross-origin call, with an allow-list
        if err is not None:
            status, body = err.http_status, error_body(err)
        elif endpoint is None:  # OPTIONS on a served path (a CORS preflight too: answered before authentication)
            status, body = 204, b""
            if cors is not None:
                allow = dict(extra).get(b"allow", b"")
                extra.extend(cors.preflight(origin, allow, _header(head, b"access-control-request-headers")))
        else:
            status, body, user = await endpoint.respond(self, head, params, receive)
            if status < 400:
                ctype = endpoint.content_type
            if endpoint.headers:
                extra.extend(endpoint.headers)
        if head.retry_after is not None:
            extra.append((b"retry-after", str(head.retry_after).encode()))
        if cors is not None and (endpoint is not None or err is not None):
            extra.extend(cors.answer(origin))
        if status in (408, 413) or head.drops_body(endpoint):
            extra.append((b"connection", b"close"))  # a body not read (late, oversized, or not wanted): drop it
        head.sent = True
        await send({"type": "http.response.start", "status": status, "headers": _headers(body, head, extra, ctype)})
        await send({"type": "http.response.body", "body": body})
        return status, user


@dataclass(frozen=True, slots=True)
class _McpDoor:
    """The remote MCP transport as a Starlette route's ASGI app; a path under /.well-known that is not one of its
    own goes on to the REST door."""

    transport: Any
    rest: Callable[[Scope, Receive, Send], Any]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if remote_mcp.serves(scope["path"]):
            await _guarded(self.transport, scope, receive, send)
        else:
            await self.rest(scope, receive, send)


async def _guarded(app: Any, scope: Scope, receive: Receive, send: Send) -> None:
    """`app` answering one request; an unexpected failure is logged and answered 500 if nothing was sent."""
    started = False

    async def watched(message: Any) -> None:
        nonlocal started
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, receive, watched)
    except Exception:
        log.exception("unhandled error on %s", scope["path"][:200])
        if not started:
            body = error_body(MethodExecutionError("Internal server error."))
            headers = [(b"content-type", JSON_TYPE), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": body})


async def _refuse_websocket(scope: Scope, receive: Receive, send: Send) -> None:
    """No route serves WebSocket: a server that offers the denial-response extension sends the 404 envelope,
    another closes the handshake (which it answers 403). `serve()` runs uvicorn without WebSocket support, so
    there an upgrade request is plain HTTP and goes through the door like any other."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    err = RouteNotFound(
        "No route serves WebSocket connections.",
        details={"field": "upgrade", "value": "websocket", "expected": None},
    )
    if "websocket.http.response" not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    body = error_body(err)
    head = Head(scope)
    await send(
        {"type": "websocket.http.response.start", "status": err.http_status, "headers": _headers(body, head, [])}
    )
    await send({"type": "websocket.http.response.body", "body": body})


def _header(head: Head, name: bytes) -> bytes | None:
    """A request header the door's pass did not keep (read on the rare paths that need one)."""
    for key, value in head.headers:
        if key == name:
            return bytes(value)
    return None


def _declared_size(value: bytes) -> int:
    try:
        return int(value)
    except ValueError:
        return 0  # the HTTP parser refuses malformed lengths before the app sees them


def _headers(
    body: bytes, head: Head, extra: list[tuple[bytes, bytes]], content_type: bytes = JSON_TYPE
) -> list[tuple[bytes, bytes]]:
    headers = [(b"x-request-id", head.request_id.encode("latin-1")), *extra]
    if body:
        headers.append((b"content-length", str(len(body)).encode()))
        headers.append((b"content-type", content_type))
    return headers


def _access(request_id: str, scope: Scope, status: int, started: float, user: str | None) -> None:
    access_log.info(
        json.dumps(
            {
                "request_id": request_id,
                "method": scope["method"],
                "path": scope["path"][:512],
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 2),
                "user": user,
            }
        )
    )


def create_app(backend_or_settings: ServedBackend | Settings, *, max_body_bytes: int | None = None) -> PluginApp:
    """The app serving every catalog operation.

    Give it Settings (the app builds the `local` backend through `pluginsdk.backend.load_backend`, with the
    schedulers' periodic tasks, starts it at startup and closes it at shutdown), or a backend satisfying
    `ServedBackend` that the caller starts. The body limit is `max_body_bytes`, else the settings'
    `api.max_body_bytes` (default 1 MiB); a body has `api.body_timeout` seconds to arrive (default 30).
    """
    settings: Any
    if isinstance(backend_or_settings, Settings):
        from ..backend import load_backend
        from ..schedulers import periodic_tasks

        settings = backend_or_settings
        backend: Any = load_backend("local", settings, background=True, periodic=periodic_tasks(settings))
        owned = True
    else:
        backend, owned = backend_or_settings, False
        settings = getattr(backend, "settings", None)
    if not isinstance(backend, ServedBackend):
        raise TypeError(
            f"{type(backend).__name__} cannot be served: it needs execute, authenticate, check_route, ping "
            "and held (pluginsdk.server.contract.ServedBackend), as the local backend has."
        )
    api = getattr(settings, "api", None)
    if max_body_bytes is None:
        max_body_bytes = int(getattr(api, "max_body_bytes", None) or MAX_BODY_BYTES)
    access = str(getattr(api, "metrics", None) or "loopback")
    body_timeout = float(getattr(api, "body_timeout", None) or BODY_TIMEOUT)
    app = PluginApp(
        backend, owned=owned, max_body_bytes=max_body_bytes, body_timeout=body_timeout, metrics_access=access
    )
    app.cors = Cors.of(api)
    if getattr(getattr(settings, "mcp", None), "http", False) and importlib.util.find_spec("mcp") is not None:
        app.remote_mcp = remote_mcp.RemoteMcp(backend, settings, max_body_bytes)
    return app
