"""The page where a user approves an assistant's access: a managed-pool sign-in (password, and the
authenticator code where the account requires one), then back to the client's redirect URI with the code.

Built from the console's pieces (its layout, escaping and stylesheet, and the `login` operation run as the
anonymous caller, whose sign-in limits count failures per client address). The form carries a CSRF token
also set as a cookie (double submit), and the pending request's id, which the client's redirect chose.
"""

from __future__ import annotations

import hmac
import secrets
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ...errors import SDKError
from ...operations import CATALOG
from ...principal import Principal
from ..console._html import render
from ..console.pages import layout
from ..console.signin import password_sign_in
from .grants import SIGNIN_PATH, Grants, SignedIn, origin_of

if TYPE_CHECKING:
    from ..contract import ServedBackend

__all__ = ["renew", "signin_page"]

CSRF_COOKIE = "pluginsdk_oauth"
MAX_FORM_BYTES = 16 * 1024
_FORM = """
<p>{client} asks to use this server's tools as you; you will be sent back to <strong>{target}</strong>.
Sign in to allow it, or close this page to refuse.</p>
{error}
<form method="post" action="{action}" class="card">
<input type="hidden" name="csrf" value="{token}"><input type="hidden" name="request" value="{request}">
<label for="username">User name</label>
<input id="username" name="username" autocomplete="username" value="{username}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password">
<label for="totp">Authenticator code (if enabled)</label>
<input id="totp" name="totp" inputmode="numeric" autocomplete="one-time-code" maxlength="8">
<button type="submit">Sign in and allow</button>
</form>
"""


async def _page(
    request: Request, grants: Grants, ident: str, *, error: str = "", username: str = "", status: int = 200
) -> Response:
    pending = await grants.pending_request(ident)
    if pending is None:
        return _plain(400, "This sign-in request is unknown or has expired; start again from your assistant.")
    client = await grants.get_client(pending.client_id)
    name = (client.client_name if client else None) or "An application"
    token = secrets.token_urlsafe(24)
    note = render('<p class="error" role="alert">{e}</p>', e=error) if error else ""
    target = origin_of(str(pending.params.redirect_uri))
    back = target or str(pending.params.redirect_uri).split("?")[0][:200]
    body = render(
        _FORM, client=name, target=back, error=note, action=SIGNIN_PATH, token=token, request=ident, username=username
    )
    form_action = f"form-action 'self' {target}; " if target else ""
    headers = {
        "cache-control": "no-store",
        "content-security-policy": f"default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; "
        f"{form_action}base-uri 'none'; frame-ancestors 'none'",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
    }
    response = HTMLResponse(layout(None, "Allow access", body), status_code=status, headers=headers)
    response.set_cookie(
        CSRF_COOKIE,
        token,
        max_age=900,
        path=SIGNIN_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _plain(status: int, text: str) -> Response:
    return HTMLResponse(layout(None, "Sign-in", render("<p>{t}</p>", t=text)), status_code=status)


async def signin_page(request: Request, grants: Grants, backend: ServedBackend) -> Response:
    """GET: the form for the pending request `?request=`; POST: sign in, then redirect with the code."""
    if request.method == "GET":
        return await _page(request, grants, request.query_params.get("request", ""))
    form = await _form(request)
    if form is None:
        return _plain(413, "The form is larger than the limit.")
    ident, username = form.get("request", ""), form.get("username", "").strip()
    cookie, token = request.cookies.get(CSRF_COOKIE, ""), form.get("csrf", "")
    if not cookie or not hmac.compare_digest(cookie.encode(), token.encode()):
        return await _page(
            request, grants, ident, error="The sign-in form expired; please try again.", username=username, status=403
        )
    if await grants.pending_request(ident) is None:
        return await _page(request, grants, ident)
    try:
        signed_in = await _sign_in(request, backend, username, form.get("password", ""), form.get("totp", "").strip())
    except SDKError as err:
        message = "Sign-in failed: wrong user name, password or code." if err.http_status == 401 else err.message
        return await _page(request, grants, ident, error=message, username=username, status=err.http_status)
    if isinstance(signed_in, str):
        return await _page(request, grants, ident, error=signed_in, username=username, status=401)
    issued = await grants.issue_code(ident, signed_in)
    if issued is None:
        return await _page(request, grants, ident)
    pending, code = issued
    target = construct_redirect_uri(str(pending.params.redirect_uri), code=code, state=pending.params.state)
    response = RedirectResponse(target, status_code=302, headers={"cache-control": "no-store"})
    response.delete_cookie(CSRF_COOKIE, path=SIGNIN_PATH)
    return response


async def _sign_in(request: Request, backend: ServedBackend, username: str, password: str, totp: str) -> SignedIn | str:
    """The managed-pool sign-in as the REST `login` route runs it; a string says what is missing."""
    tokens = await password_sign_in(backend, request, username, password, totp)
    if tokens.challenge_name == "SOFTWARE_TOKEN_MFA":
        return "Enter the code from your authenticator app."
    if tokens.challenge_name or not tokens.id_token:
        return "This account must set a new password first (pluginsdk auth login)."
    return await _signed_in(backend, tokens, tokens.refresh_token or "")


async def renew(backend: ServedBackend, refresh: str) -> SignedIn:
    """The sign-in renewed with the managed pool's refresh token, as the REST `refresh_tokens` route does
    (an SDKError once that session has ended)."""
    spec = CATALOG["refresh_tokens"]
    op = spec.build({"refresh_token": refresh})
    anonymous = Principal(user_id="anonymous", auth_method="none")
    tokens = await backend.execute(op, anonymous, route_path=spec.concrete_route(op))
    return await _signed_in(backend, tokens, tokens.refresh_token or refresh)


async def _signed_in(backend: ServedBackend, tokens: Any, refresh: str) -> SignedIn:
    authorization = f"Bearer {tokens.id_token}"
    principal = await backend.authenticate(authorization)
    return SignedIn(authorization, principal.user_id, time.time() + float(tokens.expires_in or 0), refresh)


async def _form(request: Request) -> dict[str, str] | None:
    """The url-encoded form (last value of each name), at most MAX_FORM_BYTES; None past it."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
