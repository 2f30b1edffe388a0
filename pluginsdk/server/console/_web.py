"""What the console's modules share: its paths and cookies, one request's context (`Ctx`), plain answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ...operations import CATALOG
from ...principal import Principal
from ._html import Safe, render
from .sessions import Session

if TYPE_CHECKING:
    from .app import Console

__all__ = ["COOKIE", "PREFIX", "PRE_COOKIE", "Ctx", "Form", "console_page", "plain", "set_session_cookie"]

PREFIX = "/ui"
COOKIE = "pluginsdk_console"
PRE_COOKIE = "pluginsdk_signin"
"""The sign-in form's CSRF token (double submit: the cookie and the form field must match)."""

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
    pool: bool = True
    """The managed user pool is on (its pages and the authenticator are offered only then)."""

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


def console_page(value: str) -> str:
    """Where to go after signing in: a console page only (never another site)."""
    if value.startswith(f"{PREFIX}/") and not value.startswith("//") and "\\" not in value:
        return value
    return f"{PREFIX}/"


def plain(status: int, text: str) -> Response:
    body = render(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{t}</title>'
        '<link rel="stylesheet" href="/ui/static/console.css"><link rel="icon" href="/ui/static/icon.svg">'
        '</head><body><main id="main">'
        '<h1>{t}</h1><p><a href="/ui/">Back to the console</a></p></main></body></html>',
        t=text,
    )
    return HTMLResponse(body, status_code=status, headers={"cache-control": "no-store"})


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
