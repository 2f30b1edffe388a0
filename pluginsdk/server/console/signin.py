"""Sign-in (a managed-pool password, with its TOTP code where required, an API key, or the identity provider:
`sso.py`) and sign-out."""

from __future__ import annotations

import contextlib
import hmac
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ...errors import SDKError, TooManyRequestsError
from ...operations import CATALOG
from ...principal import Principal
from . import sso
from ._html import Safe, render
from ._web import COOKIE, PRE_COOKIE, PREFIX, Ctx, Form, console_page, set_session_cookie
from .pages import layout
from .sessions import MAX_SECONDS, Session

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..contract import ServedBackend
    from .app import Console

__all__ = ["password_sign_in", "refused", "sign_in", "sign_out"]

_FORM = """{sso}
<p>{intro}</p>
{error}
<form method="post" action="/ui/login" class="card">
<input type="hidden" name="csrf" value="{token}"><input type="hidden" name="next" value="{next}">
{password}<fieldset><legend>{key_legend}</legend>
<label for="api_key">API key</label><input id="api_key" name="api_key" type="password" autocomplete="off">
</fieldset>
<button type="submit">Sign in</button>
</form>
"""
_POOL_FIELDS = """<fieldset><legend>Password</legend>
<label for="username">User name</label>
<input id="username" name="username" autocomplete="username" value="{username}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password">
<label for="totp">Authenticator code (if enabled)</label>
<input id="totp" name="totp" inputmode="numeric" autocomplete="one-time-code" maxlength="8">
</fieldset>
"""


def _form_page(
    request: Request,
    error: str = "",
    username: str = "",
    next_page: str = "",
    status: int = 200,
    *,
    button: Safe = Safe(""),
    passwords: bool = True,
) -> Response:
    """The sign-in form: the password fields only where the managed user pool takes passwords."""
    token = secrets.token_urlsafe(24)
    note = render('<p class="error" role="alert">{e}</p>', e=error) if error else ""
    body = render(
        _FORM,
        error=note,
        token=token,
        next=next_page,
        sso=button,
        intro="Sign in with your password (and authenticator code, where your account requires one), or with an "
        "API key."
        if passwords
        else "Sign in with an API key.",
        password=render(_POOL_FIELDS, username=username) if passwords else Safe(""),
        key_legend="Or an API key" if passwords else "API key",
    )
    response = HTMLResponse(layout(None, "Sign in", body), status_code=status, headers={"cache-control": "no-store"})
    _pre_cookie(response, request, token)
    return response


_FIRST_SIGN_IN = """<p>This is your first sign-in: replace the temporary password you were sent with your own.</p>
{error}
<form method="post" action="/ui/login" class="card">
<input type="hidden" name="csrf" value="{token}"><input type="hidden" name="next" value="{next}">
<input type="hidden" name="step" value="new-password">
<label for="username">User name</label>
<input id="username" name="username" autocomplete="username" value="{username}" readonly>
<label for="password">Temporary password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<label for="new_password">New password</label>
<input id="new_password" name="new_password" type="password" autocomplete="new-password" required>
<label for="new_password2">New password again</label>
<input id="new_password2" name="new_password2" type="password" autocomplete="new-password" required>
<button type="submit">Set password and sign in</button>
</form>
"""


def _new_password_page(request: Request, error: str, username: str, next_page: str, status: int = 200) -> Response:
    """The first sign-in's step: the temporary password again (nothing of it is kept between the two forms),
    and the new one twice."""
    token = secrets.token_urlsafe(24)
    note = render('<p class="error" role="alert">{e}</p>', e=error) if error else ""
    body = render(_FIRST_SIGN_IN, error=note, token=token, next=next_page, username=username)
    page = layout(None, "Set a new password", body)
    response = HTMLResponse(page, status_code=status, headers={"cache-control": "no-store"})
    _pre_cookie(response, request, token)
    return response


def _pre_cookie(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        PRE_COOKIE,
        token,
        max_age=900,
        path=f"{PREFIX}/login",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


_next = console_page


async def _passwords(console: Console) -> bool:
    """Whether the managed user pool takes passwords (the sign-in options; assumed so when they cannot be read)."""
    try:
        return bool((await sso.options(console)).passwords)
    except SDKError:
        return True


async def refused(console: Console, request: Request, error: str, status: int) -> Response:
    """The sign-in page saying why a sign-in failed."""
    button, passwords = await sso.button(console, f"{PREFIX}/"), await _passwords(console)
    return _form_page(request, error, status=status, button=button, passwords=passwords)


async def sign_in(console: Console, request: Request, form: Form) -> Response:
    if request.method != "POST":
        next_page = _next(request.query_params.get("next", ""))
        button, passwords = await sso.button(console, next_page), await _passwords(console)
        return _form_page(request, next_page=next_page, button=button, passwords=passwords)

    def field(name: str) -> str:
        values = form.get(name)
        return values[-1] if values else ""

    username, next_page = field("username").strip(), _next(field("next"))
    button, passwords = await sso.button(console, next_page), await _passwords(console)
    new_password = field("new_password") if field("step") == "new-password" else ""
    refusal = await _refused_before_sign_in(console, request, field, username, next_page, button=button)
    if refusal is not None:
        return refusal
    setup_mfa = False
    try:
        if field("api_key"):
            authorization = f"Bearer {field('api_key').strip()}"
            principal = await console.backend.authenticate(authorization)
            session, lifetime = Session(authorization, principal.user_id, "api-key"), MAX_SECONDS
        else:
            tokens = await password_sign_in(
                console.backend, request, username, field("password"), field("totp").strip(), new_password=new_password
            )
            asked = _challenge_page(
                request, tokens, username, next_page, new_password, button=button, passwords=passwords
            )
            if asked is not None:
                return asked
            authorization = f"Bearer {tokens.id_token}"
            principal = await console.backend.authenticate(authorization)
            session, lifetime = Session(authorization, principal.user_id, "password"), float(tokens.expires_in or 0)
            setup_mfa = tokens.mfa_setup_required
    except SDKError as err:
        message = "Sign-in failed: wrong user name, password, code or key." if err.http_status == 401 else err.message
        if new_password:  # the temporary password was wrong, or the new one breaks the password rules
            return _new_password_page(request, message, username, next_page, err.http_status)
        return _form_page(request, message, username, next_page, err.http_status, button=button, passwords=passwords)
    value = await console.sessions.open(session, lifetime or None, _client(request))
    if setup_mfa:  # a role the user holds counts only in a multi-factor session: enrol first
        next_page = f"{PREFIX}/mfa?{urlencode({'next': next_page})}"
    response = RedirectResponse(next_page, status_code=303)
    set_session_cookie(response, request, value, int(min(lifetime or MAX_SECONDS, MAX_SECONDS)))
    response.delete_cookie(PRE_COOKIE, path=f"{PREFIX}/login")
    return response


def _challenge_page(
    request: Request, tokens: Any, username: str, next_page: str, new_password: str, *, button: Safe, passwords: bool
) -> Response | None:
    """The page a sign-in answered with a challenge leads to (a new password, the authenticator's code), or
    None when the tokens sign the user in."""
    if tokens.challenge_name == "NEW_PASSWORD_REQUIRED":
        return _new_password_page(request, "", username, next_page)
    if tokens.challenge_name == "SOFTWARE_TOKEN_MFA":
        why = "Enter the code from your authenticator app."
        if new_password:  # the new password is set: sign in with it and the code
            why = "Your new password is set. Sign in with it and the code from your authenticator app."
        return _form_page(request, why, username, next_page, 401, button=button, passwords=passwords)
    if tokens.challenge_name or not tokens.id_token:
        return _form_page(request, tokens.message, username, next_page, 401, button=button, passwords=passwords)
    return None


async def _refused_before_sign_in(
    console: Console, request: Request, field: Callable[[str], str], username: str, next_page: str, *, button: Safe
) -> Response | None:
    """The page refusing a sign-in form before any credential is checked: an expired form (the double-submit
    token), a new password and its repetition that differ, or too many sign-ins from this address (429)."""
    cookie, token = request.cookies.get(PRE_COOKIE, ""), field("csrf")
    if not cookie or not hmac.compare_digest(cookie.encode(), token.encode()):
        return _form_page(
            request, "The sign-in form expired; please try again.", username, next_page, 403, button=button
        )
    new_password = field("new_password") if field("step") == "new-password" else ""
    if field("step") == "new-password" and (not new_password or new_password != field("new_password2")):
        why = "The new password and its repetition differ." if new_password else "Choose a new password."
        return _new_password_page(request, why, username, next_page, 400)
    try:
        await console.sessions.admit(_client(request))
    except TooManyRequestsError as err:
        response = _form_page(request, err.message, username, next_page, 429, button=button)
        response.headers["retry-after"] = str(err.retry_after)
        return response
    return None


def _client(request: Request) -> str | None:
    """The address the request came from (what per-address limits count)."""
    return request.client.host if request.client else None


async def password_sign_in(
    backend: ServedBackend, request: Request, username: str, password: str, totp: str, *, new_password: str = ""
) -> Any:
    """The managed pool's `login` as the REST route runs it for an anonymous caller from the request's client
    (the console's and the /mcp OAuth page's sign-in); answers the session tokens or a challenge."""
    spec = CATALOG["login"]
    data: dict[str, Any] = {"username": username, "password": password}
    if totp:
        data["totp_code"] = totp
    if new_password:
        data["new_password"] = new_password
    op = spec.build(data)
    client = request.client.host if request.client else None
    anonymous = Principal(user_id="anonymous", auth_method="none", claims={"client": client} if client else {})
    return await backend.execute(op, anonymous, route_path=spec.concrete_route(op))


async def sign_out(ctx: Ctx) -> Response:
    """End the session here and, for a password or identity-provider session, its tokens in the engine; an OIDC
    session goes on to the provider's end-session endpoint, where it has one."""
    await ctx.console.sessions.end(ctx.request.cookies.get(COOKIE))
    if ctx.session.method in ("password", "sso"):
        with contextlib.suppress(SDKError):  # the console session is gone either way
            await ctx.call("logout", {})
    ended = await sso.sign_out_url(ctx.console, ctx.request) if ctx.session.method == "sso" else None
    response = sso.signed_out(ended) if ended else RedirectResponse(f"{PREFIX}/login", status_code=303)
    response.delete_cookie(COOKIE, path=f"{PREFIX}/")
    return response
