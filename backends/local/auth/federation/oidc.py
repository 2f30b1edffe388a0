"""OIDC sign-in: authorization code with PKCE against the configured OpenID provider.

Authlib's OAuth 2.0 client does the protocol: the authorization URL (`state`, `nonce`, an S256 code
challenge) and the code exchange at the token endpoint (with `clientSecret`, or none for a public client).
The ID token's signature, issuer, audience and times are checked like a bearer token's (oauth.py: the same
cached key set, `clockSkewSeconds` of leeway), then its OpenID claims (`nonce`, `at_hash`, `azp`) by Authlib's
`CodeIDToken`. Claims the ID token leaves out (e-mail, groups) are read from the userinfo endpoint, for the
same `sub` only.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pluginsdk.errors import AuthenticationError, ConfigurationError, ValidationError
from pluginsdk.models.auth_results import FederatedSignIn

from . import Identity, begin, groups_of, resume
from .oauth import token_header

if TYPE_CHECKING:
    from authlib.integrations.httpx_client import AsyncOAuth2Client

    from ..service import AuthService
    from .oauth import ExternalVerifier

__all__ = ["finish", "start"]

_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_REFUSED = "The identity provider's answer is not valid for this sign-in; start it again."


def _verifier(svc: AuthService) -> ExternalVerifier:
    assert svc.external is not None  # started with useOidc
    return svc.external


def _check_redirect(uri: str) -> None:
    """An https:// URL, or http:// on loopback (the CLI's one-shot listener, a local console); no fragment, no
    space or control character."""
    url = urlparse(uri)
    secure = url.scheme == "https" or (url.scheme == "http" and url.hostname in _LOOPBACK)
    if not (url.hostname and secure) or url.fragment or "\\" in uri or not uri.isprintable() or " " in uri:
        raise ValidationError(
            "redirect_uri must be an https:// URL, or http:// on loopback, without a fragment.",
            details={"field": "redirect_uri", "expected": "https://... or http://127.0.0.1:PORT/..."},
        )


def _client(svc: AuthService, redirect_uri: str) -> AsyncOAuth2Client:
    try:
        from authlib.integrations.httpx_client import AsyncOAuth2Client
    except ImportError:
        raise ConfigurationError(
            "OIDC sign-in needs Authlib: install the `sso` extra (pip install 'pluginsdk[sso]').",
            key="app.authProvider.useManaged.useOidc",
        ) from None

    idp = svc.config.external
    return AsyncOAuth2Client(
        client_id=idp.clientId,
        client_secret=idp.clientSecret,
        scope=idp.scope,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic" if idp.clientSecret else "none",
        timeout=idp.httpTimeout,
        follow_redirects=False,
    )


def _http_errors() -> tuple[type[Exception], ...]:
    """The HTTP errors of Authlib's client: httpx2's where it is installed (Authlib 1.9 prefers it), httpx's."""
    import httpx

    try:
        import httpx2
    except ImportError:
        return (httpx.HTTPError,)
    return (httpx.HTTPError, httpx2.HTTPError)


async def _endpoint(svc: AuthService, name: str) -> str:
    found = await _verifier(svc).discovery.endpoint(name)
    if found is None:
        raise AuthenticationError(f"The identity provider names no {name}; set it in useExternalOAuthIdp.")
    return found


async def start(svc: AuthService, redirect_uri: str) -> FederatedSignIn:
    """The provider's authorization URL for a new sign-in; its nonce and PKCE verifier kept under its state."""
    _check_redirect(redirect_uri)
    authorize = await _endpoint(svc, "authorization_endpoint")
    async with _client(svc, redirect_uri) as client:
        from authlib.common.security import generate_token

        nonce, verifier = generate_token(32), generate_token(64)
        pending = {"kind": "oidc", "nonce": nonce, "verifier": verifier, "redirect_uri": redirect_uri}
        state = await begin(svc, pending)
        url, _ = client.create_authorization_url(authorize, state=state, nonce=nonce, code_verifier=verifier)
    return FederatedSignIn(redirect_url=url, state=state)


async def _exchange(svc: AuthService, pending: dict[str, Any], code: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the token response, the userinfo claims or {}) for `code`."""
    from authlib.integrations.httpx_client import OAuthError

    token_url = await _endpoint(svc, "token_endpoint")
    userinfo_url = await _verifier(svc).discovery.endpoint("userinfo_endpoint")
    async with _client(svc, pending["redirect_uri"]) as client:
        try:
            token: dict[str, Any] = dict(
                await client.fetch_token(token_url, code=code, code_verifier=pending["verifier"])
            )
            info: Any = {}
            if userinfo_url and token.get("access_token"):
                resp = await client.get(userinfo_url)
                info = resp.json() if resp.status_code == 200 else {}
        except (OAuthError, *_http_errors(), ValueError, KeyError):
            raise AuthenticationError("The identity provider refused the sign-in code; start it again.") from None
    return token, info if isinstance(info, dict) else {}


async def _id_claims(svc: AuthService, token: dict[str, Any], nonce: str) -> dict[str, Any]:
    """The ID token's claims: signed by the provider for us, in time, for this sign-in's nonce."""
    from authlib.oidc.core import CodeIDToken
    from joserfc.errors import JoseError

    id_token = token.get("id_token")
    if not isinstance(id_token, str):
        raise AuthenticationError(_REFUSED)
    claims = await _verifier(svc).claims(id_token, require=("exp", "iat", "iss", "aud", "sub", "nonce"))
    sent = claims.get("nonce")
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), nonce.encode()):
        raise AuthenticationError(_REFUSED)
    checks = CodeIDToken(
        claims,
        token_header(id_token) or {},
        options={"iss": {"value": svc.config.external.issuer}},
        params={"nonce": nonce, "access_token": token.get("access_token"), "client_id": svc.config.external.clientId},
    )
    try:
        checks.validate(leeway=int(svc.config.external.clockSkewSeconds))
    except JoseError:
        raise AuthenticationError(_REFUSED) from None
    return claims


async def finish(svc: AuthService, state: str, code: str) -> Identity:
    """Who the provider signed in, from the code it sent back for `state`."""
    pending = await resume(svc, state)
    if pending.get("kind") != "oidc":
        raise AuthenticationError(_REFUSED)
    token, info = await _exchange(svc, pending, code)
    claims = await _id_claims(svc, token, pending["nonce"])
    if info.get("sub") == claims["sub"]:  # OpenID Connect Core 5.3.2: another subject's claims are ignored
        claims = {**info, **claims}
    idp, fed = svc.config.external, svc.config.provider.federation
    user_id = claims.get(idp.userIdClaim)
    if not isinstance(user_id, str) or not user_id:
        raise AuthenticationError(f"The identity provider's ID token has no {idp.userIdClaim} claim.")
    email = claims.get(idp.emailClaim)
    verified = claims.get("email_verified", True) is not False
    return Identity(
        issuer=str(claims["iss"]),
        user_id=user_id,
        email=email if isinstance(email, str) and email and verified else None,
        groups=groups_of(claims.get(fed.rolesClaim)),
        mfa=_verifier(svc).mfa(claims),
    )
