"""This server as the OAuth 2.1 authorization server for /mcp: the `mcp` SDK's provider interface over
in-memory stores of registered clients, pending authorizations, codes and access tokens.

The protocol (metadata, registration, the authorize and token endpoints, PKCE S256, exact redirect URIs)
is the `mcp` SDK's (`mcp.server.auth`); this module decides what it stores and what a grant stands for.
A grant stands for a managed-pool sign-in: the sign-in page (`signin.py`) signs the user in and keeps the
resulting `Authorization` value, and every /mcp request re-authenticates it through the backend, so a
revoked session or a disabled user stops the token at once.

Nothing is stored in the clear: a client secret, a pending authorization's id, a code, an access token
and a refresh token are kept by their SHA-256 only, and the sign-in's credentials (its `Authorization`
value, and the managed pool's refresh token of its session) are sealed (AES-GCM) under a key derived from
the code or token that unlocks them. Codes are single-use (taken on first presentation, whatever the
outcome); access tokens live `mcp.token_seconds`, never past the sign-in's own expiry, and are bound to
the /mcp resource URL. A client registered for the `refresh_token` grant also gets a refresh token,
rotated on use, which renews the sign-in through the managed pool (`refresh_tokens`), so it ends when the
pool's session does. The stores live in the serving process (one worker, as the console's sessions).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import Field
from starlette.requests import Request

from ...errors import SDKError

__all__ = ["Grant", "Grants", "SecretClients", "SignedIn"]

CODE_SECONDS = 300
"""An authorization code not exchanged within this is void."""
REFRESH_SECONDS = 30 * 86400
"""A refresh token's longest life; the managed pool's session behind it usually ends it first."""
PENDING_SECONDS = 900
"""A user has this long to sign in after the client sent them to authorize."""
MAX_ENTRIES = 10_000
"""Per store; the oldest entries go first past it (a flood of registrations cannot exhaust memory)."""
SIGNIN_PATH = "/oauth/signin"
_REFUSED_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "about", "blob"})


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _seal(secret: str, plain: str) -> bytes:
    """`plain` encrypted under a key derived from `secret` (which is never stored)."""
    nonce = os.urandom(12)
    return nonce + AESGCM(_key(secret)).encrypt(nonce, plain.encode(), None)


def _unseal(secret: str, sealed: bytes) -> str:
    return AESGCM(_key(secret)).decrypt(sealed[:12], sealed[12:], None).decode()


def _key(secret: str) -> bytes:
    return hmac.new(secret.encode(), b"pluginsdk-oauth-seal", hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A user's sign-in on the sign-in page: the `Authorization` value it produced, when that ends, and the
    managed pool's refresh token of the session (empty if none), which renews it."""

    authorization: str = field(repr=False)
    user_id: str
    expires_at: float
    refresh: str = field(default="", repr=False)

    def sealed(self, secret: str) -> bytes:
        return _seal(secret, json.dumps([self.authorization, self.refresh]))

    @classmethod
    def unsealed(cls, secret: str, sealed: bytes, user_id: str, expires_at: float) -> SignedIn:
        authorization, refresh = json.loads(_unseal(secret, sealed))
        return cls(authorization, user_id, expires_at, refresh)


Renew = Callable[[str], Awaitable[SignedIn]]
"""The managed pool's refresh token -> the renewed sign-in (`signin.renew`)."""


class Grant(AuthorizationCode):
    """An authorization code as the token endpoint sees it, with the sign-in it stands for."""

    signed_in: Any = Field(default=None, exclude=True, repr=False)


@dataclass(slots=True)
class _Stored:
    """A code's or an access token's record (the secret itself is the store's key, hashed)."""

    client_id: str
    scopes: list[str]
    expires_at: float
    resource: str
    subject: str
    sealed: bytes = field(repr=False)
    signin_expires: float = 0.0
    code: dict[str, Any] = field(default_factory=dict)
    """For a code: `code_challenge`, `redirect_uri`, `redirect_uri_provided_explicitly`."""


@dataclass(slots=True)
class Pending:
    """An authorization request waiting for its user to sign in."""

    client_id: str
    params: AuthorizationParams
    expires_at: float


class Grants:
    """The provider `mcp.server.auth` drives (`OAuthAuthorizationServerProvider`), for one resource URL."""

    def __init__(self, issuer: str, token_seconds: int, renew: Renew) -> None:
        self.issuer = issuer.rstrip("/")
        self.resource = f"{self.issuer}/mcp"
        self.token_seconds = token_seconds
        self.renew = renew
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, Pending] = {}
        self.codes: dict[str, _Stored] = {}
        self.tokens: dict[str, _Stored] = {}
        self.refreshes: dict[str, _Stored] = {}

    # -- registration ---------------------------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Kept with its secret hashed; redirect URIs must not be script, data or file URLs."""
        for uri in client_info.redirect_uris or ():
            if (uri.scheme or "").lower() in _REFUSED_SCHEMES or uri.fragment:
                raise RegistrationError("invalid_redirect_uri", f"Redirect URI {str(uri)[:200]!r} is not allowed.")
        secret = client_info.client_secret
        stored = client_info.model_copy(update={"client_secret": _digest(secret) if secret else None})
        _bounded(self.clients)
        self.clients[client_info.client_id or ""] = stored

    # -- authorization --------------------------------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """The sign-in page's URL for this request (the client's redirect URI was matched exactly already)."""
        if params.resource is not None and params.resource.rstrip("/") != self.resource:
            raise AuthorizeError("invalid_target", f"This server issues tokens for {self.resource} only.")
        ident = secrets.token_urlsafe(32)
        _purge(self.pending)
        _bounded(self.pending)
        self.pending[_digest(ident)] = Pending(client.client_id or "", params, time.time() + PENDING_SECONDS)
        return f"{self.issuer}{SIGNIN_PATH}?request={ident}"

    def pending_request(self, ident: str) -> Pending | None:
        found = self.pending.get(_digest(ident))
        if found is None or found.expires_at < time.time():
            return None
        return found

    def issue_code(self, ident: str, signed_in: SignedIn) -> tuple[Pending, str] | None:
        """The pending request `ident` completed by a sign-in: (the request, its new code); None if it is gone."""
        pending = self.pending.pop(_digest(ident), None)
        if pending is None or pending.expires_at < time.time():
            return None
        code = secrets.token_urlsafe(32)
        params = pending.params
        _purge(self.codes)
        _bounded(self.codes)
        self.codes[_digest(code)] = _Stored(
            client_id=pending.client_id,
            scopes=params.scopes or [],
            expires_at=time.time() + CODE_SECONDS,
            resource=self.resource,
            subject=signed_in.user_id,
            sealed=signed_in.sealed(code),
            signin_expires=signed_in.expires_at,
            code={
                "code_challenge": params.code_challenge,
                "redirect_uri": params.redirect_uri,
                "redirect_uri_provided_explicitly": params.redirect_uri_provided_explicitly,
            },
        )
        return pending, code

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> Grant | None:
        """Taken, not read: a code answers once, whether or not its exchange then succeeds."""
        stored = self.codes.pop(_digest(authorization_code), None)
        if stored is None or stored.client_id != client.client_id:
            return None
        signed_in = SignedIn.unsealed(authorization_code, stored.sealed, stored.subject, stored.signin_expires)
        return Grant(
            code=authorization_code,
            scopes=stored.scopes,
            expires_at=stored.expires_at,
            client_id=stored.client_id,
            resource=stored.resource,
            subject=stored.subject,
            signed_in=signed_in,
            **stored.code,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: Grant
    ) -> OAuthToken:
        signed_in: SignedIn = authorization_code.signed_in
        return self._issue(client, authorization_code.scopes, signed_in)

    def _issue(self, client: OAuthClientInformationFull, scopes: list[str], signed_in: SignedIn) -> OAuthToken:
        """An access token for `signed_in`, and a refresh token where the client registered for them and the
        sign-in can be renewed."""
        now = time.time()
        expires = min(now + self.token_seconds, signed_in.expires_at)
        if expires <= now:
            raise TokenError("invalid_grant", "The sign-in behind this grant has ended; sign in again.")

        def record(until: float, sealed: bytes) -> _Stored:
            return _Stored(client.client_id or "", scopes, until, self.resource, signed_in.user_id, sealed)

        token = secrets.token_urlsafe(32)
        _keep(self.tokens, token, record(expires, _seal(token, signed_in.authorization)))
        refresh = None
        if signed_in.refresh and "refresh_token" in client.grant_types:
            refresh = secrets.token_urlsafe(32)
            _keep(self.refreshes, refresh, record(now + REFRESH_SECONDS, signed_in.sealed(refresh)))
        scope = " ".join(scopes) or None
        return OAuthToken(access_token=token, expires_in=max(1, int(expires - now)), scope=scope, refresh_token=refresh)

    # -- tokens -----------------------------------------------------------------------------------------------------
    def verify(self, token: str) -> tuple[AccessToken, str] | None:
        """(what the token is, the sign-in's `Authorization` value) for a live token this server issued."""
        stored = self.tokens.get(_digest(token))
        if stored is None:
            return None
        if stored.expires_at <= time.time():
            self.tokens.pop(_digest(token), None)
            return None
        access = AccessToken(
            token="",  # the principal's identity, not the secret: kept in the request scope only
            client_id=stored.client_id,
            scopes=stored.scopes,
            expires_at=int(stored.expires_at),
            resource=stored.resource,
            subject=stored.subject,
        )
        return access, _unseal(token, stored.sealed)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.verify(token)
        return found[0] if found else None

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        stored = self.refreshes.get(_digest(refresh_token))
        if stored is None or stored.client_id != client.client_id:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=stored.client_id,
            scopes=stored.scopes,
            expires_at=int(stored.expires_at),
            resource=stored.resource,
            subject=stored.subject,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        """Rotated: the refresh token answers once; the managed pool renews the sign-in behind it (or refuses,
        once that session ended: signed out, disabled, expired)."""
        stored = self.refreshes.pop(_digest(refresh_token.token), None)
        if stored is None or stored.client_id != client.client_id:
            raise TokenError("invalid_grant", "The refresh token is unknown or was used already.")
        before = SignedIn.unsealed(refresh_token.token, stored.sealed, stored.subject, 0.0)
        try:
            renewed = await self.renew(before.refresh)
        except SDKError:
            raise TokenError("invalid_grant", "The sign-in behind this grant has ended; sign in again.") from None
        if renewed.user_id != stored.subject:
            raise TokenError("invalid_grant", "The sign-in behind this grant has changed; sign in again.")
        return self._issue(client, scopes, renewed)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        return None  # revocation is not offered (the sign-in's session ends with `logout`)

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "The JWT bearer grant is not supported here.")


class SecretClients(ClientAuthenticator):
    """The SDK's client authentication against stored secret hashes: the SDK compares the presented secret
    with the stored one, so it is handed a client record holding the presented secret when its hash matches,
    and an unguessable one when it does not."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        presented = _presented_secret(request, form.get("client_secret"))
        provider = self.provider

        class _Presented:
            async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
                client: OAuthClientInformationFull | None = await provider.get_client(client_id)
                if client is None or not client.client_secret:
                    return client
                ok = presented is not None and hmac.compare_digest(_digest(presented), client.client_secret)
                return client.model_copy(update={"client_secret": presented if ok else secrets.token_hex(32)})

        checked: OAuthClientInformationFull = await ClientAuthenticator(_Presented()).authenticate_request(  # type: ignore[arg-type]
            request
        )
        return checked


def _presented_secret(request: Request, posted: Any) -> str | None:
    """The client secret of a token request: HTTP Basic (RFC 6749 2.3.1, URL-encoded) or the form's."""
    header = request.headers.get("authorization", "")
    if header.startswith("Basic "):
        try:
            decoded = base64.b64decode(header[6:], validate=True).decode()
        except ValueError:
            return None
        _, sep, secret = decoded.partition(":")
        return unquote(secret) if sep else None
    return posted if isinstance(posted, str) else None


def _keep(store: dict[str, _Stored], secret: str, record: _Stored) -> None:
    """`record` under the SHA-256 of `secret`, expired and surplus entries making room."""
    _purge(store)
    _bounded(store)
    store[_digest(secret)] = record


def _purge(store: dict[str, Any]) -> None:
    now = time.time()
    if len(store) >= MAX_ENTRIES // 2:
        for key in [k for k, v in store.items() if v.expires_at < now]:
            del store[key]


def _bounded(store: dict[str, Any]) -> None:
    while len(store) >= MAX_ENTRIES:
        del store[next(iter(store))]


def origin_of(uri: str) -> str | None:
    """`scheme://host[:port]` of an http(s) URI, else None."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None
