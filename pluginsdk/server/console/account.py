"""The signed-in user's authenticator: enrol TOTP in the console (set-up, then a code confirms it), after which
the session is multi-factor and the roles that require MFA count."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from starlette.responses import RedirectResponse, Response

from ...errors import SDKError
from ._html import Safe, render
from ._web import COOKIE, console_page, set_session_cookie
from .pages import page
from .sessions import MAX_SECONDS, Session

if TYPE_CHECKING:
    from ._web import Ctx

__all__ = ["ROUTES"]

_WHY = (
    "<p>An authenticator app (any TOTP app) gives a six-digit code that changes every 30 seconds. "
    "Roles that require multi-factor sign-in count only in a session that proved one.</p>"
)


def _next(ctx: Ctx) -> str:
    return console_page(ctx.value("next") or ctx.query("next"))


async def mfa(ctx: Ctx) -> Response:
    """Where the user starts: why, and the button that starts the set-up (a POST: it makes a new secret)."""
    if ctx.session.method != "password":
        body = Safe(
            "<p>Authenticators are set up by users who sign in with a password. An API key session has none; "
            "an identity provider's sign-in has its own.</p>"
        )
        return page(ctx, "Authenticator", body)
    if ctx.principal.mfa:
        body = render(
            '<p class="notice" role="status">This session is multi-factor: your authenticator is enrolled.</p>'
            '<p><a href="{n}">Continue</a></p>',
            n=_next(ctx),
        )
        return page(ctx, "Authenticator", body)
    if not ctx.can("setup_mfa"):
        body = render(
            "{why}<p>None of the roles that count in this session may set up an authenticator (the route "
            "<code>POST /auth/user/mfa/setup</code>): ask an administrator for a role that may, such as "
            "<code>basicReadOnly</code>.</p>",
            why=Safe(_WHY),
        )
        return page(ctx, "Authenticator", body)
    body = render(
        "{why}<p>A role you hold may require it: set one up now.</p>"
        '<form method="post" action="/ui/mfa/setup" class="card">{csrf}'
        '<input type="hidden" name="next" value="{n}"><button type="submit">Set up an authenticator</button></form>'
        '<p><a href="{n}">Not now</a></p>',
        why=Safe(_WHY),
        csrf=ctx.csrf,
        n=_next(ctx),
    )
    return page(ctx, "Authenticator", body)


async def setup(ctx: Ctx) -> Response:
    """A new pending secret for this session, shown once, with the form that confirms it."""
    created = await ctx.call("setup_mfa", {})
    return _code_page(ctx, created.secret_code, created.otpauth_uri)


def _code_page(ctx: Ctx, secret: str, uri: str) -> Response:
    body = render(
        "<ol><li>In your authenticator app, add an account with this key (or open the link on the device that "
        'runs the app):<p><code id="mfa-secret">{s}</code></p><p><a id="mfa-uri" href="{u}">{u}</a></p></li>'
        "<li>Enter the code the app shows.</li></ol>{f}",
        s=secret,
        u=uri,
        f=_code_form(ctx),
    )
    return page(ctx, "Set up an authenticator", body)


def _code_form(ctx: Ctx) -> Safe:
    return render(
        '<form method="post" action="/ui/mfa/verify" class="card">{csrf}<input type="hidden" name="next" value="{n}">'
        '<label for="f-code">Code from the app</label>'
        '<input id="f-code" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="6" required>'
        '<button type="submit">Confirm</button></form>',
        csrf=ctx.csrf,
        n=_next(ctx),
    )


async def verify(ctx: Ctx) -> Response:
    """The code confirms the set-up: the engine answers a multi-factor token, which replaces this session's."""
    try:
        tokens = await ctx.call("verify_mfa", {"code": ctx.value("code")})
    except SDKError as err:  # a mistyped code: the set-up stays pending, the key is not shown again
        body = render(
            '<p class="error" role="alert">{m}</p>{f}<p>Lost the key? <a href="/ui/mfa">Start again</a>.</p>',
            m=err.message,
            f=_code_form(ctx),
        )
        return page(ctx, "Set up an authenticator", body, err.http_status)
    console, cookie = ctx.console, ctx.request.cookies.get(COOKIE)
    await console.sessions.end(cookie)
    lifetime = float(tokens.expires_in or 0) or MAX_SECONDS
    session = Session(f"Bearer {tokens.id_token}", ctx.session.user_id, "password")
    value = await console.sessions.open(session, lifetime, ctx.request.client.host if ctx.request.client else None)
    done = "Authenticator enrolled: this session is multi-factor."
    target = _next(ctx)
    response = RedirectResponse(f"{target}{'&' if '?' in target else '?'}done={quote(done)}", 303)
    set_session_cookie(response, ctx.request, value, int(min(lifetime, MAX_SECONDS)))
    return response


ROUTES = (
    ("GET", "/mfa", mfa),
    ("POST", "/mfa/setup", setup),
    ("POST", "/mfa/verify", verify),
)
