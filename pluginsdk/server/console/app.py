"""The console's ASGI app: sessions, CSRF, security headers, sign-in and sign-out, and dispatch to pages."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from urllib.parse import parse_qsl, quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import Receive, Scope, Send

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


class Console:
    """The ASGI app the REST app hands every /ui request to."""

    def __init__(self, backend: ServedBackend) -> None:
        self.backend = backend
        self.sessions = Sessions()
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = [
            (method, re.compile(f"^{PREFIX}{pattern}$"), handler)
            for method, pattern, handler in (
                *pages.ROUTES,
                *access.ROUTES,
                *account.ROUTES,
                *keys_admin.ROUTES,
                *template_pages.ROUTES,
            )
        ]
        self._static: dict[str, bytes] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request = Request(scope, receive)
        try:
            response = await self._respond(request)
        except Exception:
            log.exception("console error")
            response = plain(500, "Internal error.")
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        await response(scope, receive, send)
        if access_log.isEnabledFor(logging.INFO):
            line = {"method": request.method, "path": request.url.path[:512], "status": response.status_code}
            line["ms"] = round((time.perf_counter() - started) * 1000, 2)
            access_log.info(json.dumps({**line, "console": True}))

    async def _respond(self, request: Request) -> Response:
        path, method = request.url.path, request.method
        if path == PREFIX:
            return RedirectResponse(f"{PREFIX}/", status_code=308)
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
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            if method == "POST":
                return plain(401, "Sign in first.")
            return RedirectResponse(f"{PREFIX}/login?next={quote(path)}", status_code=303)
        if method == "POST" and not session.csrf_ok(form["csrf"][-1] if form.get("csrf") else None):
            return plain(403, "The form's CSRF token is missing or wrong; reload the page and try again.")
        try:
            principal = await self.backend.authenticate(session.authorization)
        except AuthenticationError:
            self.sessions.end(request.cookies.get(COOKIE))
            return RedirectResponse(f"{PREFIX}/login", status_code=303)
        ctx = Ctx(self, request, session, principal, await self._allowed(principal), form)
        return await self._dispatch(ctx, path, method)

    async def _dispatch(self, ctx: Ctx, path: str, method: str) -> Response:
        """The page serving `method path`, run as the caller; an SDKError is the refusal page with its status."""
        if path == f"{PREFIX}/logout" and method == "POST":
            return await signin.sign_out(ctx)
        for route_method, pattern, handler in self.routes:
            hit = pattern.match(path)
            if hit and (route_method == method or (route_method == "GET" and method == "HEAD")):
                try:
                    response: Response = await handler(ctx, **hit.groupdict())
                except SDKError as err:
                    return pages.error_page(ctx, err)
                return response
        return plain(404, "No console page has this path.")

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
