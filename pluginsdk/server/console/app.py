"""The console's ASGI app: sessions, CSRF, security headers, sign-in and sign-out, and dispatch to pages."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from ...errors import AuthenticationError, PermissionDeniedError, SDKError
from ...operations import CATALOG
from ...principal import Principal
from ..contract import ServedBackend
from ._html import Safe, render
from .sessions import Session, Sessions

__all__ = ["PREFIX", "Console", "Ctx"]

PREFIX = "/ui"
COOKIE = "pluginsdk_console"
PRE_COOKIE = "pluginsdk_signin"
"""The sign-in form's CSRF token (double submit: the cookie and the form field must match)."""
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

Form = dict[str, list[str]]


@dataclass
class Ctx:
    """One console request: the caller, its session, what it may call, and its form."""

    console: Console
    request: Request
    session: Session
    principal: Principal
    allowed: dict[str, frozenset[str]]
    form: Form = field(default_factory=dict)

    def can(self, name: str) -> bool:
        """The caller may call operation `name` (its route and method are in the allowed-routes answer)."""
        spec = CATALOG[name]
        return spec.route is not None and spec.method in self.allowed.get(spec.route, frozenset())

    async def call(self, name: str, data: dict[str, Any]) -> Any:
        """Operation `name` executed as the caller on its concrete route (tier 1 and tier 2, as REST does)."""
        spec = CATALOG[name]
        op = spec.build(data)
        return await self.console.backend.execute(op, self.principal, route_path=spec.concrete_route(op))

    def value(self, name: str, default: str = "") -> str:
        values = self.form.get(name)
        return values[-1].strip() if values else default

    def values(self, name: str) -> list[str]:
        return self.form.get(name, [])

    def query(self, name: str, default: str = "") -> str:
        return self.request.query_params.get(name, default)

    @property
    def csrf(self) -> Safe:
        return render('<input type="hidden" name="csrf" value="{t}">', t=self.session.csrf)


Handler = Callable[..., Awaitable[Response]]


class Console:
    """The ASGI app the REST app hands every /ui request to."""

    def __init__(self, backend: ServedBackend) -> None:
        from . import pages

        self.backend = backend
        self.sessions = Sessions()
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = [
            (method, re.compile(f"^{PREFIX}{pattern}$"), handler) for method, pattern, handler in pages.ROUTES
        ]
        self._static: dict[str, bytes] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            response = await self._respond(request)
        except Exception:
            from ..app import log

            log.exception("console error")
            response = _plain(500, "Internal error.")
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        await response(scope, receive, send)

    async def _respond(self, request: Request) -> Response:
        path, method = request.url.path, request.method
        if path == PREFIX:
            return RedirectResponse(f"{PREFIX}/", status_code=308)
        if path.startswith(f"{PREFIX}/static/") and method in ("GET", "HEAD"):
            return self._asset(path.removeprefix(f"{PREFIX}/static/"))
        if method not in ("GET", "HEAD", "POST"):
            return _plain(405, "Method not allowed.")
        form: Form = {}
        if method == "POST":
            if not _same_origin(request):
                return _plain(403, "Cross-origin form refused.")
            parsed = await _read_form(request)
            if isinstance(parsed, Response):
                return parsed
            form = parsed
        if path == f"{PREFIX}/login":
            from .signin import sign_in

            return await sign_in(self, request, form)
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            if method == "POST":
                return _plain(401, "Sign in first.")
            return RedirectResponse(f"{PREFIX}/login?next={quote(path)}", status_code=303)
        if method == "POST" and not session.csrf_ok((form.get("csrf") or [None])[-1]):
            return _plain(403, "The form's CSRF token is missing or wrong; reload the page and try again.")
        try:
            principal = await self.backend.authenticate(session.authorization)
        except AuthenticationError:
            self.sessions.end(request.cookies.get(COOKIE))
            return RedirectResponse(f"{PREFIX}/login", status_code=303)
        ctx = Ctx(self, request, session, principal, await self._allowed(principal), form)
        if path == f"{PREFIX}/logout" and method == "POST":
            from .signin import sign_out

            return await sign_out(ctx)
        for route_method, pattern, handler in self.routes:
            hit = pattern.match(path)
            if hit and (route_method == method or (route_method == "GET" and method == "HEAD")):
                from .pages import error_page

                try:
                    return await handler(ctx, **hit.groupdict())
                except SDKError as err:
                    return error_page(ctx, err)
        return _plain(404, "No console page has this path.")

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
            return _plain(404, "No such asset.")
        body = self._static.get(name)
        if body is None:
            body = self._static[name] = (resources.files("pluginsdk") / "data" / "console" / name).read_bytes()
        return Response(body, media_type=ctype, headers={"cache-control": "public, max-age=3600"})


def new_signin_token() -> str:
    return secrets.token_urlsafe(24)


def _plain(status: int, text: str) -> Response:
    body = render(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{t}</title>'
        '<link rel="stylesheet" href="/ui/static/console.css"><link rel="icon" href="/ui/static/icon.svg">'
        '</head><body><main id="main">'
        '<h1>{t}</h1><p><a href="/ui/">Back to the console</a></p></main></body></html>',
        t=text,
    )
    return HTMLResponse(body, status_code=status, headers={"cache-control": "no-store"})


def _same_origin(request: Request) -> bool:
    """A browser's Origin header, where sent, names this server (a second check behind SameSite and CSRF)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


async def _read_form(request: Request) -> Form | Response:
    """The url-encoded form, at most MAX_FORM_BYTES."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ("application/x-www-form-urlencoded", ""):
        return _plain(415, "Forms are sent url-encoded.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return _plain(413, "The form is larger than the limit.")
    form: Form = {}
    for key, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        form.setdefault(key, []).append(value)
    return form


def set_session_cookie(response: Response, request: Request, value: str, max_age: int) -> None:
    response.set_cookie(
        COOKIE,
        value,
        max_age=max_age,
        path=f"{PREFIX}/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def now() -> float:
    return time.monotonic()
