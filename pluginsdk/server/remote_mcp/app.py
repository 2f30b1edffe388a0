"""The ASGI app behind /mcp, the OAuth endpoints and the metadata documents (see the package docstring)."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import (
    REGISTRATION_PATH,
    TOKEN_PATH,
    build_metadata,
    build_resource_metadata_url,
    cors_middleware,
    create_auth_routes,
    create_protected_resource_routes,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import AuthenticationError, PermissionDeniedError, SDKError, TooManyRequestsError
from ...mcp.caller import Caller
from ...mcp.profiles import resolve_profile
from ...mcp.resources import ResourceSet
from ...mcp.server import Ctx, build_server
from ...mcp.tools import ToolSet
from .._endpoint import error_body
from .._wire import ClientGone, read_body
from ..console.sessions import admit
from ..limits import BODY_TIMEOUT
from .answers import JSON_ANSWER, Sessions, answer_json, wants_json
from .grants import SIGNIN_PATH, Grants, SecretClients, origin_of
from .signin import renew, signin_page

if TYPE_CHECKING:
    from ...principal import Principal
    from ..contract import ServedBackend

__all__ = ["PRINCIPAL", "McpHttp"]

log = logging.getLogger("pluginsdk.server")
access_log = logging.getLogger("pluginsdk.access")

PRINCIPAL = "pluginsdk.principal"
"""The request scope's key for the caller /mcp authenticated (one per HTTP request, never per session)."""
MAX_BASES = 16
MAX_OAUTH_BODY = 64 * 1024
"""Largest body the OAuth endpoints read (413 beyond it): registrations, token requests and forms are small."""
_COUNTED = {
    ("POST", REGISTRATION_PATH): "oauth-register",
    ("GET", "/authorize"): "oauth-authorize",
    ("POST", "/authorize"): "oauth-authorize",
    ("POST", SIGNIN_PATH): "oauth-signin",
}
"""Anonymous requests that create something, rate-limited per client address (`api.held`)."""
AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]
"""Token endpoint authentication: a public client (`none`, PKCE alone) or its secret."""


class McpHttp:
    """/mcp over the Streamable HTTP session manager, with authentication per request, and the OAuth
    authorization server (one per base URL the server is reached at, `mcp.public_url` fixing it)."""

    def __init__(self, backend: ServedBackend, settings: Any, max_body_bytes: int) -> None:
        self.backend = backend
        mcp = getattr(settings, "mcp", None)
        self.public_url: str | None = getattr(mcp, "public_url", None)
        self.token_seconds = int(getattr(mcp, "token_seconds", 900))
        profile = resolve_profile(None, getattr(mcp, "profile", None))
        server = build_server(ToolSet(None, profile), ResourceSet(None), self._executor_of)
        # stateless: no session ids, so any server or worker answers any request (see docs/mcp.md)
        self.manager = Sessions(server, max_request_body_size=max_body_bytes, stateless=True)
        self.allowed_origins = frozenset(o.rstrip("/") for o in getattr(mcp, "allowed_origins", None) or ())
        self.max_body_bytes = max_body_bytes
        self.body_timeout = float(getattr(getattr(settings, "api", None), "body_timeout", None) or BODY_TIMEOUT)
        self._apps: dict[str, tuple[ASGIApp, Grants]] = {}
        self._runner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._started = asyncio.Event()

    # -- lifecycle: the session manager's task group lives in its own task, from the first request on ---------------
    async def _ensure_running(self) -> None:
        """Start the session manager once; every request waits until it runs (or raises why it could not)."""
        if self._runner is None:
            started = self._started

            async def run() -> None:
                async with self.manager.run():
                    started.set()
                    await self._stop.wait()

            self._runner = asyncio.get_running_loop().create_task(run())
        if not self._started.is_set():
            waiter = asyncio.ensure_future(self._started.wait())
            await asyncio.wait({waiter, self._runner}, return_when=asyncio.FIRST_COMPLETED)
            if not self._started.is_set():
                waiter.cancel()
                self._runner.result()  # raises what stopped it
                raise RuntimeError("the MCP session manager stopped")

    async def aclose(self) -> None:
        """Stop the session manager (the server's shutdown); requests under way end with it."""
        self._stop.set()
        if self._runner is not None:
            await self._runner

    # -- requests ---------------------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status: list[int] = [500]

        async def sent(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            base = self.base_url(scope)
            kind = _COUNTED.get((scope["method"], scope["path"]))
            if kind is not None:
                client = scope.get("client")
                try:
                    await admit(self.backend.held(), kind, client[0] if client else None)
                except SDKError as err:
                    await _refused(sent, err)
                    return
            if scope["path"] == "/mcp":
                await self._mcp(scope, receive, sent, base)
            else:
                await self._app(base)[0](scope, receive, sent)
        finally:
            if access_log.isEnabledFor(logging.INFO):
                line = {"method": scope["method"], "path": scope["path"][:512], "status": status[0]}
                line["ms"] = round((time.perf_counter() - started) * 1000, 2)
                access_log.info(json.dumps({**line, "mcp": True}))

    def base_url(self, scope: Scope) -> str:
        """`mcp.public_url`, else the address this connection reached (the socket's, not the Host header's)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        scheme = "https" if scope.get("scheme") == "https" else "http"
        host, port = scope.get("server") or ("127.0.0.1", 80)
        host = f"[{host}]" if ":" in str(host) else host
        default = (scheme == "http" and port == 80) or (scheme == "https" and port == 443)
        return f"{scheme}://{host}" if default else f"{scheme}://{host}:{port}"

    def _app(self, base: str) -> tuple[ASGIApp, Grants]:
        found = self._apps.get(base)
        if found is None:
            if len(self._apps) >= MAX_BASES:
                self._apps.pop(next(iter(self._apps)))
            found = self._apps[base] = _oauth_app(base, self.token_seconds, self.backend)
        return found

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, base: str) -> None:
        """Check the `Origin` (403), authenticate this request (401 with the resource metadata's URL), then the
        session manager."""
        origin = _header(scope, b"origin")
        own = origin_of(base)
        if origin is not None and origin.rstrip("/") != own and origin.rstrip("/") not in self.allowed_origins:
            await _refused(
                send, PermissionDeniedError(f"Origin {origin[:200]!r} may not call /mcp (mcp.allowed_origins).")
            )
            return
        grants = self._app(base)[1]
        metadata = str(build_resource_metadata_url(AnyHttpUrl(grants.resource)))
        authorization = _header(scope, b"authorization")
        if not authorization:
            await _unauthorized(send, metadata, None)
            return
        try:
            principal, access = await self._authenticate(authorization, grants)
        except AuthenticationError as err:
            await _unauthorized(send, metadata, err.message)
            return
        except SDKError as err:  # throttled, or the store unavailable: its status, in the envelope
            await _refused(send, err)
            return
        await self._ensure_running()
        scoped = {**scope, "user": AuthenticatedUser(access), PRINCIPAL: principal}
        if scope["method"] != "POST":
            await self.manager.handle_request(scoped, receive, send)
            return
        try:
            body = await read_body(receive, self.max_body_bytes, self.body_timeout)
        except ClientGone:
            return
        except SDKError as err:  # too large (413) or too slow (408), before any parsing
            await _refused(send, err)
            return
        token = answer_json(wants_json(body))
        try:
            await self.manager.handle_request(scoped, _replay(body, receive), send)
        finally:
            JSON_ANSWER.reset(token)

    async def _authenticate(self, authorization: str, grants: Grants) -> tuple[Principal, AccessToken]:
        """The caller: a token this server issued (bound to its /mcp), else whatever the REST server accepts
        (an API key, an external IdP's JWT, a managed-pool token). The AccessToken names the principal's
        credential (the request's `user`, as the SDK expects it)."""
        scheme, _, token = authorization.strip().partition(" ")
        issued = await grants.verify(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if issued is not None:
            access, signed_in = issued
            if (access.resource or "").rstrip("/") != grants.resource:
                raise AuthenticationError("The token was issued for another resource.")
            principal = await self.backend.authenticate(signed_in)
            return principal, access.model_copy(update={"claims": {"iss": "oauth"}})
        principal = await self.backend.authenticate(authorization)
        client = f"api-key:{principal.api_key_id}" if principal.api_key_id else principal.auth_method
        access = AccessToken(token="", client_id=client, scopes=[], subject=principal.user_id)
        return principal, access.model_copy(update={"claims": {"iss": principal.auth_method}})

    def _executor_of(self, ctx: Ctx) -> Caller:
        """The caller of the HTTP request carrying this message; refused without one (fail closed)."""
        request = ctx.request
        principal = request.scope.get(PRINCIPAL) if isinstance(request, Request) else None
        if principal is None:
            raise AuthenticationError("This request carries no authenticated caller.")
        return Caller(self.backend, principal)


def _oauth_app(base: str, token_seconds: int, backend: ServedBackend) -> tuple[ASGIApp, Grants]:
    """The authorization server's routes (the `mcp` SDK's), the sign-in page and the metadata documents."""
    grants = Grants(base, token_seconds, functools.partial(renew, backend), backend.held)
    issuer = AnyHttpUrl(base)
    options = ClientRegistrationOptions(enabled=True)
    metadata = build_metadata(issuer, None, options, RevocationOptions())
    metadata.token_endpoint_auth_methods_supported = AUTH_METHODS
    ours = {TOKEN_PATH, REGISTRATION_PATH, "/.well-known/oauth-authorization-server"}
    routes = [r for r in create_auth_routes(grants, issuer, None, options) if getattr(r, "path", None) not in ours]
    routes.append(
        Route(
            "/.well-known/oauth-authorization-server",
            endpoint=cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        )
    )
    tokens = TokenHandler(grants, SecretClients(grants))
    routes.append(
        Route(TOKEN_PATH, endpoint=cors_middleware(tokens.handle, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"])
    )

    async def register(request: Request) -> Response:
        """RFC 7591 registration, the client kept against the address it came from (`api.held`)."""
        address = request.client.host if request.client else None
        try:
            registering: Any = _Registering(grants, address)  # the one provider method registration calls
            return await RegistrationHandler(registering, options).handle(request)
        except TooManyRequestsError as err:
            return Response(error_body(err), err.http_status, _retry_headers(err), "application/json")

    routes.append(
        Route(REGISTRATION_PATH, endpoint=cors_middleware(register, ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"])
    )
    resource_routes = create_protected_resource_routes(AnyHttpUrl(grants.resource), [issuer], resource_name="pluginsdk")
    routes.extend(resource_routes)
    # the document at the root too (RFC 9728's path-less form, for clients that look there first)
    routes.append(Route("/.well-known/oauth-protected-resource", endpoint=resource_routes[0].endpoint))

    async def signin(request: Request) -> Response:
        return await signin_page(request, grants, backend)

    routes.append(Route(SIGNIN_PATH, endpoint=signin, methods=["GET", "POST"]))
    return RequestBodyLimitMiddleware(Starlette(routes=routes), MAX_OAUTH_BODY), grants


class _Registering:
    """The registration handler's provider: `grants`, registering against the request's address."""

    def __init__(self, grants: Grants, address: str | None) -> None:
        self.grants, self.address = grants, address

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        await self.grants.register_client(client_info, self.address)


def _retry_headers(err: SDKError) -> dict[str, str]:
    return {"retry-after": str(err.retry_after)} if isinstance(err, TooManyRequestsError) else {}


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body read already given back first (then the connection's own messages)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Any:
        return pending.pop() if pending else await receive()

    return replayed


async def _refused(send: Send, err: SDKError) -> None:
    body = error_body(err)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers.append((b"connection", b"close"))
    headers.extend((k.encode(), v.encode()) for k, v in _retry_headers(err).items())
    await send({"type": "http.response.start", "status": err.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _unauthorized(send: Send, metadata: str, why: str | None) -> None:
    """401 with `WWW-Authenticate: Bearer resource_metadata="..."` (MCP authorization; RFC 9728 5.1), and
    `error="invalid_token"` when a credential came and was refused (RFC 6750 3.1)."""
    parts = [f'resource_metadata="{metadata}"']
    if why is not None:
        parts[:0] = ['error="invalid_token"', 'error_description="{}"'.format(why.replace('"', "'")[:200])]
    body = json.dumps({"error": "invalid_token", "error_description": why or "Authentication required."}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", ("Bearer " + ", ".join(parts)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
