"""The console's ASGI app, mounted at /ui: sessions, CSRF, security headers, sign-in and sign-out, then Starlette's
`Router` over the pages' routes (each page module's `ROUTES`: method, path pattern, handler)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from urllib.parse import parse_qsl, quote

from starlette.convertors import CONVERTOR_TYPES, Convertor, register_url_convertor
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route, Router
from starlette.types import Message, Receive, Scope, Send

from ...errors import AuthenticationError, PermissionDeniedError, SDKError
from ...operations import CATALOG
from ...principal import Principal
from ..contract import ServedBackend
from . import access, account, keys_admin, pages, signin, sso, template_pages
from ._web import COOKIE, PREFIX, Ctx, Form, plain
from .sessions import Sessions

__all__ = ["PREFIX", "Console"]

Handler = Callable[..., Awaitable[Response]]

log = logging.getLogger("pluginsdk.server")
access_log = logging.getLogger("pluginsdk.access")

MAX_FORM_BYTES = 64 * 1024
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}
_STATIC = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}


_CTX = "pluginsdk.console"
"""The scope key the pre-dispatch leaves a signed-in request's `Ctx` under, for the page's route."""


class _Param(Convertor[str]):
    """A path parameter of the console's routes; each pattern a page module declares is a subclass with it as
    its `regex`."""

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


_GROUP = re.compile(r"\(\?P<(\w+)>((?:[^()]|\([^()]*\))+)\)")
"""A named group of a route pattern (its pattern may hold one level of parentheses: `(activate|deactivate)`)."""


def _route(method: str, pattern: str, handler: Handler) -> Route:
    """A page module's (method, pattern, handler) as a Starlette `Route` under the /ui mount: each named group
    of `pattern` becomes a path parameter whose convertor matches exactly what the group matches."""

    def param(hit: re.Match[str]) -> str:
        regex = hit.group(2)
        name = "console_" + hashlib.sha256(regex.encode()).hexdigest()[:12]
        if name not in CONVERTOR_TYPES:
            register_url_convertor(name, type(name, (_Param,), {"regex": regex})())
        return f"{{{hit.group(1)}:{name}}}"

    return Route(_GROUP.sub(param, pattern), _page(handler), methods=[method])


def _page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of one page: the page run with the request's `Ctx` and path parameters; an
    SDKError is the refusal page with its status."""

    async def endpoint(request: Request) -> Response:
        ctx: Ctx = request.scope[_CTX]
        try:
            response: Response = await handler(ctx, **request.path_params)
        except SDKError as err:
            return pages.error_page(ctx, err)
        return response

    return endpoint


class Console:
    """The ASGI app mounted at /ui: sign-in, sessions and CSRF before any page, then Starlette's `Router` over the
    pages' routes; security headers on every answer."""

    def __init__(self, backend: ServedBackend) -> None:
        self.backend = backend
        self.sessions = Sessions(backend)
        modules = (pages, access, account, keys_admin, template_pages)
        self.router = Router(
            routes=[_route(method, pattern, handler) for m in modules for method, pattern, handler in m.ROUTES],
            redirect_slashes=False,
            default=_not_found,
        )
        self._static: dict[str, bytes] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started, status, sent = time.perf_counter(), 500, False

        async def secured(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status, sent = message["status"], True
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        request = Request(scope, receive)
        try:
            response = await self._respond(request)
            if response is None:  # signed in: the page's route answers
                await self.router(scope, receive, secured)
            else:
                await response(scope, receive, secured)
        except Exception:
            log.exception("console error")
            if not sent:
                await plain(500, "Internal error.")(scope, receive, secured)
        if access_log.isEnabledFor(logging.INFO):
            line = {"method": request.method, "path": request.url.path[:512], "status": status}
            line["ms"] = round((time.perf_counter() - started) * 1000, 2)
            access_log.info(json.dumps({**line, "console": True}))

    async def _respond(self, request: Request) -> Response | None:
        """The answer given before any page (assets, sign-in, a refused or expired session), or None with the
        signed-in caller's `Ctx` left in the scope for the page's route."""
        path, method = request.url.path, request.method
        if path.startswith(f"{PREFIX}/static/") and method in ("GET", "HEAD"):
            return self._asset(path.removeprefix(f"{PREFIX}/static/"))
        if method not in ("GET", "HEAD", "POST"):
            return plain(405, "Method not allowed.")
        form = await _posted(request)
        if isinstance(form, Response):
            return form
        if path == f"{PREFIX}/login":
            return await signin.sign_in(self, request, form)
        if path.startswith(f"{PREFIX}/sso/"):
            return await sso.respond(self, request, form, signin.refused)
        session = await self.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            if method == "POST":
                return plain(401, "Sign in first.")
            return RedirectResponse(f"{PREFIX}/login?next={quote(path)}", status_code=303)
        if method == "POST" and not session.csrf_ok(form["csrf"][-1] if form.get("csrf") else None):
            return plain(403, "The form's CSRF token is missing or wrong; reload the page and try again.")
        try:
            principal = await self.backend.authenticate(session.authorization)
        except AuthenticationError:
            await self.sessions.end(request.cookies.get(COOKIE))
            return RedirectResponse(f"{PREFIX}/login", status_code=303)
        ctx = Ctx(self, request, session, principal, await self._allowed(principal), form, await _pool(self))
        if path == f"{PREFIX}/logout" and method == "POST":
            return await signin.sign_out(ctx)
        request.scope[_CTX] = ctx
        return None

    async def _allowed(self, principal: Principal) -> dict[str, frozenset[str]]:
        """Route template -> methods the caller may call (the allowed-routes answer; none if it fails)."""
        spec = CATALOG["list_allowed_api_routes"]
        op = spec.build({})
        try:
            result = await self.backend.execute(op, principal, route_path=spec.concrete_route(op))
        except PermissionDeniedError:
            return {}
        return {route.path: frozenset(route.methods) for route in result.routes}

    def _asset(self, name: str) -> Response:
        ctype = _STATIC.get(name)
        if ctype is None:
            return plain(404, "No such asset.")
        body = self._static.get(name)
        if body is None:
            body = self._static[name] = (resources.files("pluginsdk") / "data" / "console" / name).read_bytes()
        return Response(body, media_type=ctype, headers={"cache-control": "public, max-age=3600"})


async def _pool(console: Console) -> bool:
    """Whether the managed user pool is on (the sign-in options, kept once read; assumed on when unreadable)."""
    try:
        return bool((await sso.options(console)).passwords)
    except SDKError:
        return True


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    await plain(404, "No console page has this path.")(scope, receive, send)


def _same_origin(request: Request) -> bool:
    """A browser's Origin header, where sent, names this server (a second check behind SameSite and CSRF)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


async def _posted(request: Request) -> Form | Response:
    """A POST's form ({} for other methods); the SAML assertion consumer takes the identity provider's
    cross-site POST (sso.py binds it otherwise), every other form must come from this origin."""
    if request.method != "POST":
        return {}
    return await (_read_form(request) if request.url.path == sso.ACS else _form(request))


async def _form(request: Request) -> Form | Response:
    """A POST's form, refused (403) from another origin."""
    if not _same_origin(request):
        return plain(403, "Cross-origin form refused.")
    return await _read_form(request)


async def _read_form(request: Request) -> Form | Response:
    """The url-encoded form, at most MAX_FORM_BYTES."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ("application/x-www-form-urlencoded", ""):
        return plain(415, "Forms are sent url-encoded.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return plain(413, "The form is larger than the limit.")
    form: Form = {}
    for key, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        form.setdefault(key, []).append(value)
    return form
