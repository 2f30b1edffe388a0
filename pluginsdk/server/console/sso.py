"""Sign-in through the organisation's identity provider: the button, the start, the provider's answer
(OIDC callback, SAML assertion consumer), the SP metadata, and the provider's sign-out.

OIDC: the `state` is also kept in a cookie of this browser (SameSite=Lax, so it comes back with the
provider's redirect) and must match the one the provider returns. SAML's answer is a cross-site POST that
carries no such cookie: it is bound by its RelayState (a begun sign-in, single use) and checked by the
engine (signature, audience, recipient, times, replay). A session opens as after a password sign-in; its
first page is reached through a same-site step, so the session cookie (SameSite=Strict) is sent with it.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ...errors import SDKError, TooManyRequestsError
from ...operations import CATALOG
from ...principal import Principal
from ._html import Safe, render
from ._web import PREFIX, Form, console_page, plain, set_session_cookie
from .sessions import MAX_SECONDS, Session

if TYPE_CHECKING:
    from .app import Console

__all__ = ["ACS", "button", "respond", "sign_out_url", "signed_out"]

STATE_COOKIE = "pluginsdk_sso"
NEXT_COOKIE = "pluginsdk_sso_next"
CALLBACK = f"{PREFIX}/sso/oidc/callback"
ACS = f"{PREFIX}/sso/saml/acs"
METADATA = f"{PREFIX}/sso/saml/metadata"
_OPTIONS = "_sso_options"

Refusal = Callable[["Console", Request, str, int], Awaitable[Response]]
"""The sign-in page saying why (`signin.refused`)."""


async def _run(console: Console, name: str, data: dict[str, Any], request: Request | None = None) -> Any:
    """An unauthenticated operation (sign-in) as the anonymous caller the REST server would see."""
    spec = CATALOG[name]
    op = spec.build(data)
    client = request.client.host if request is not None and request.client else None
    anonymous = Principal(user_id="anonymous", auth_method="none", claims={"client": client} if client else {})
    return await console.backend.execute(op, anonymous, route_path=spec.concrete_route(op))


async def options(console: Console) -> Any:
    """The sign-in options, kept once complete: they follow the configuration, which a server keeps (an OIDC
    provider that could not be asked for its end-session endpoint is asked again next time)."""
    found = getattr(console, _OPTIONS, None)
    if found is None:
        found = await _run(console, "get_sign_in_options", {})
        if found.federation != "oidc" or found.end_session_url:
            setattr(console, _OPTIONS, found)
    return found


async def button(console: Console, next_page: str) -> Safe:
    """The "Sign in with <provider>" link, or nothing when no provider is configured."""
    try:
        found = await options(console)
    except SDKError:
        return Safe("")
    if not found.federation:
        return Safe("")
    return render(
        '<p class="sso"><a class="button" href="{h}">Sign in with {n}</a></p>',
        h=f"{PREFIX}/sso/start?" + urlencode({"next": next_page}),
        n=found.display_name,
    )


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


async def _start(console: Console, request: Request) -> Response:
    found = await options(console)
    data = {"redirect_uri": _base(request) + CALLBACK} if found.federation == "oidc" else {}
    begun = await _run(console, "start_federated_sign_in", data, request)
    response = RedirectResponse(begun.redirect_url, status_code=303, headers={"cache-control": "no-store"})
    secure = request.url.scheme == "https"
    for name, value in ((STATE_COOKIE, begun.state), (NEXT_COOKIE, console_page(request.query_params.get("next", "")))):
        response.set_cookie(
            name, value, max_age=600, path=f"{PREFIX}/sso/", httponly=True, samesite="lax", secure=secure
        )
    return response


async def _finish(console: Console, request: Request, data: dict[str, Any]) -> Response:
    """Finish the sign-in; the session cookie, then the next page through a same-site step."""
    tokens = await _run(console, "finish_federated_sign_in", data, request)
    authorization = f"Bearer {tokens.id_token}"
    principal = await console.backend.authenticate(authorization)
    lifetime = float(tokens.expires_in or 0)
    client = request.client.host if request.client else None
    value = await console.sessions.open(Session(authorization, principal.user_id, "sso"), lifetime or None, client)
    target = console_page(request.cookies.get(NEXT_COOKIE, ""))
    response = _onward(target, "Signed in", "Continue to the console")
    set_session_cookie(response, request, value, int(min(lifetime or MAX_SECONDS, MAX_SECONDS)))
    for name in (STATE_COOKIE, NEXT_COOKIE):
        response.delete_cookie(name, path=f"{PREFIX}/sso/")
    return response


def _onward(target: str, title: str, link: str) -> Response:
    """A page that moves the browser on to `target` by itself (a navigation of its own: same-site for the
    session cookie, and not a form's redirect, which the console's `form-action 'self'` would stop)."""
    body = render(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={t}">'
        '<title>{h} · pluginsdk</title></head><body><main id="main"><h1>{h}</h1>'
        '<p><a href="{t}">{l}</a></p></main></body></html>',
        t=target,
        h=title,
        l=link,
    )
    return HTMLResponse(body, headers={"cache-control": "no-store"})


def signed_out(target: str) -> Response:
    """After sign-out: on to the provider's end-session endpoint."""
    return _onward(target, "Signed out", "Sign out at the identity provider too")


async def _callback(console: Console, request: Request, refused: Refusal) -> Response:
    params = request.query_params
    state, code = params.get("state", ""), params.get("code", "")
    kept = request.cookies.get(STATE_COOKIE, "")
    if not state or not kept or not hmac.compare_digest(state.encode(), kept.encode()):
        return await refused(console, request, "The sign-in could not be matched to this browser; start it again.", 400)
    if params.get("error") or not code:
        return await refused(console, request, "The identity provider did not sign you in.", 401)
    return await _finish(console, request, {"state": state, "code": code})


async def _acs(console: Console, request: Request, form: Form, refused: Refusal) -> Response:
    relay, answer = form.get("RelayState", [""])[-1], form.get("SAMLResponse", [""])[-1]
    if not relay or not answer:
        return await refused(console, request, "The identity provider's answer is incomplete; start again.", 400)
    return await _finish(console, request, {"state": relay, "saml_response": answer})


async def _metadata(console: Console) -> Response:
    found = await _run(console, "get_saml_metadata", {})
    return Response(found.metadata, media_type="application/samlmetadata+xml")


async def respond(console: Console, request: Request, form: Form, refused: Refusal) -> Response:
    """A request under /ui/sso/; a refusal is the sign-in page with its message (`refused`)."""
    path, method = request.url.path, request.method
    try:
        if path == f"{PREFIX}/sso/start" and method in ("GET", "HEAD"):
            return await _start(console, request)
        if path == CALLBACK and method in ("GET", "HEAD"):
            return await _callback(console, request, refused)
        if path == ACS and method == "POST":
            return await _acs(console, request, form, refused)
        if path == METADATA and method in ("GET", "HEAD"):
            return await _metadata(console)
    except SDKError as err:
        message = "Sign-in through the identity provider failed: " + err.message
        response = await refused(console, request, message, err.http_status)
        if isinstance(err, TooManyRequestsError):  # too many starts from this address: when to try again
            response.headers["retry-after"] = str(err.retry_after)
        return response
    return plain(404, "No console page has this path.")


async def sign_out_url(console: Console, request: Request) -> str | None:
    """Where the browser ends the provider's session too (OIDC RP-initiated logout), or None."""
    try:
        found = await options(console)
    except SDKError:
        return None
    if found.federation != "oidc" or not found.end_session_url:
        return None
    query = {"client_id": found.client_id or "", "post_logout_redirect_uri": _base(request) + f"{PREFIX}/login"}
    joiner = "&" if "?" in found.end_session_url else "?"
    return str(found.end_session_url) + joiner + urlencode(query)
