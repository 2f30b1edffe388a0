"""This server as the OAuth 2.1 authorization server for /mcp: the `mcp` SDK's provider interface over rows
of the backend's store — registered clients, pending authorizations, codes, access and refresh tokens
(`HeldState`, `backends/local/store/held.py`) — so every server and worker on the store answers any step,
and a restart keeps every registration and grant.

The protocol (metadata, registration, the authorize and token endpoints, PKCE S256, exact redirect URIs)
is the `mcp` SDK's (`mcp.server.auth`); this module decides what it stores and what a grant stands for.
A grant stands for a managed-pool sign-in: the sign-in page (`signin.py`) signs the user in and keeps the
resulting `Authorization` value, and every /mcp request re-authenticates it through the backend, so a
revoked session or a disabled user stops the token at once, on every server.

Nothing is stored in the clear: a client secret, a pending authorization's id, a code, an access token
and a refresh token are kept by their SHA-256 only, and the sign-in's credentials (its `Authorization`
value, and the managed pool's refresh token of its session) are sealed (AES-GCM) under a key derived from
the code or token that unlocks them (`.._sealed`). Codes are single-use (taken on first presentation,
whatever the outcome); access tokens live `mcp.token_seconds`, never past the sign-in's own expiry, and
are bound to the /mcp resource URL. A client registered for the `refresh_token` grant also gets a refresh
token, rotated on use, which renews the sign-in through the managed pool (`refresh_tokens`), so it ends
when the pool's session does; a spent refresh token presented again ends its whole family (every token of
that sign-in: OAuth 2.1, the security BCP). Redirect URIs are `https`, or `http` on a loopback address
only (the MCP authorization spec). Bounds: `api.held` (docs/input.md).
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

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

from ...errors import SDKError, TooManyRequestsError
from .._sealed import digest as _digest
from .._sealed import seal as _seal
from .._sealed import unseal as _unseal

if TYPE_CHECKING:
    from ..contract import HeldState, Row

__all__ = ["Grant", "Grants", "SecretClients", "SignedIn", "redirect_allowed"]

CODE_SECONDS = 300
"""An authorization code not exchanged within this is void."""
REFRESH_SECONDS = 30 * 86400
"""A refresh token's longest life; the managed pool's session behind it usually ends it first."""
PENDING_SECONDS = 900
"""A user has this long to sign in after the client sent them to authorize."""
SIGNIN_PATH = "/oauth/signin"
_LOOPBACK_NAMES = frozenset({"localhost"})


def redirect_allowed(uri: str) -> bool:
    """`https`, or `http` to a loopback host (127.0.0.0/8, ::1, localhost); no fragment."""
    parts = urlsplit(uri)
    if parts.fragment or not parts.hostname:
        return False
    scheme = parts.scheme.lower()
    if scheme == "https":
        return True
    if scheme != "http":
        return False
    host = parts.hostname.lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A user's sign-in on the sign-in page: the `Authorization` value it produced, when that ends, and the
    managed pool's refresh token of the session (empty if none), which renews it."""

    authorization: str = field(repr=False)
    user_id: str
    expires_at: float
    refresh: str = field(default="", repr=False)

    def sealed(self, secret: str) -> str:
        return _seal(secret, json.dumps([self.authorization, self.refresh]))

    @classmethod
    def unsealed(cls, secret: str, sealed: str, user_id: str, expires_at: float) -> SignedIn:
        authorization, refresh = json.loads(_unseal(secret, sealed))
        return cls(authorization, user_id, expires_at, refresh)


Renew = Callable[[str], Awaitable[SignedIn]]
"""The managed pool's refresh token -> the renewed sign-in (`signin.renew`)."""


class Grant(AuthorizationCode):
    """An authorization code as the token endpoint sees it, with the sign-in it stands for and its family."""

    signed_in: Any = Field(default=None, exclude=True, repr=False)
    family: str = Field(default="", exclude=True)


@dataclass(slots=True)
class Pending:
    """An authorization request waiting for its user to sign in."""

    client_id: str
    params: AuthorizationParams
    expires_at: float


class Grants:
    """The provider `mcp.server.auth` drives (`OAuthAuthorizationServerProvider`), for one resource URL, over
    the store's rows (`held()`, the started backend's)."""

    def __init__(self, issuer: str, token_seconds: int, renew: Renew, held: Callable[[], HeldState]) -> None:
        self.issuer = issuer.rstrip("/")
        self.resource = f"{self.issuer}/mcp"
        self.token_seconds = token_seconds
        self.renew = renew
        self.held = held

    # -- registration ---------------------------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        data = await self.held().client(client_id) if client_id and len(client_id) <= 200 else None
        return None if data is None else OAuthClientInformationFull.model_validate_json(data)

    async def register_client(self, client_info: OAuthClientInformationFull, address: str | None = None) -> None:
        """Kept with its secret hashed; redirect URIs must be https or loopback http. TooManyRequestsError
        when `address` holds `api.held.clients_per_address` registrations already."""
        for uri in client_info.redirect_uris or ():
            if not redirect_allowed(str(uri)):
                raise RegistrationError(
                    "invalid_redirect_uri",
                    f"Redirect URI {str(uri)[:200]!r} is not allowed: use https, or http on a loopback address.",
                )
        secret = client_info.client_secret
        stored = client_info.model_copy(update={"client_secret": _digest(secret) if secret else None})
        held = self.held()
        limits = held.limits
        kept = await held.add_client(
            client_info.client_id or "",
            stored.model_dump_json(exclude_none=True),
            address,
            limits.clients_per_address,
            limits.client_idle_seconds,
        )
        if not kept:
            raise TooManyRequestsError(
                "Too many clients are registered from this address; reuse one.",
                details={"retry_after": int(limits.creation_window_seconds)},
            )

    # -- authorization --------------------------------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """The sign-in page's URL for this request (the client's redirect URI was matched exactly already)."""
        if params.resource is not None and params.resource.rstrip("/") != self.resource:
            raise AuthorizeError("invalid_target", f"This server issues tokens for {self.resource} only.")
        ident = secrets.token_urlsafe(32)
        row = {
            "kind": "pending",
            "family": secrets.token_hex(16),
            "client_id": client.client_id or "",
            "data": params.model_dump_json(),
            "expires_at": time.time() + PENDING_SECONDS,
        }
        await self.held().add_grant(_digest(ident), row)
        return f"{self.issuer}{SIGNIN_PATH}?request={ident}"

    async def pending_request(self, ident: str) -> Pending | None:
        if not ident or len(ident) > 100:
            return None
        row = await self.held().grant(_digest(ident), "pending")
        return None if row is None else _pending(row)

    async def issue_code(self, ident: str, signed_in: SignedIn) -> tuple[Pending, str] | None:
        """The pending request `ident` completed by a sign-in: (the request, its new code); None if it is gone.
        The code starts a grant family; past `api.held.grants_per_user` the user's own oldest family ends."""
        held = self.held()
        row = await held.take_grant(_digest(ident), "pending")
        if row is None:
            return None
        pending = _pending(row)
        code = secrets.token_urlsafe(32)
        params = pending.params
        data = {
            "scopes": params.scopes or [],
            "resource": self.resource,
            "signin_expires": signed_in.expires_at,
            "code": {
                "code_challenge": params.code_challenge,
                "redirect_uri": str(params.redirect_uri),
                "redirect_uri_provided_explicitly": params.redirect_uri_provided_explicitly,
            },
        }
        record = {
            "kind": "code",
            "family": secrets.token_hex(16),
            "client_id": pending.client_id,
            "user_id": signed_in.user_id,
            "data": json.dumps(data),
            "sealed": signed_in.sealed(code),
            "expires_at": time.time() + CODE_SECONDS,
        }
        await held.add_grant(_digest(code), record, per_user=held.limits.grants_per_user)
        await held.touch_client(pending.client_id)
        return pending, code

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> Grant | None:
        """Taken, not read: a code answers once, whether or not its exchange then succeeds."""
        row = await self.held().take_grant(_digest(authorization_code), "code")
        if row is None or row["client_id"] != client.client_id:
            return None
        data = json.loads(row["data"])
        subject = str(row["user_id"])
        signed_in = SignedIn.unsealed(authorization_code, str(row["sealed"]), subject, float(data["signin_expires"]))
        return Grant(
            code=authorization_code,
            scopes=data["scopes"],
            expires_at=float(row["expires_at"]),
            client_id=str(row["client_id"]),
            resource=data["resource"],
            subject=subject,
            signed_in=signed_in,
            family=str(row["family"]),
            **data["code"],
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: Grant
    ) -> OAuthToken:
        signed_in: SignedIn = authorization_code.signed_in
        return await self._issue(client, authorization_code.scopes, signed_in, authorization_code.family)

    async def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], signed_in: SignedIn, family: str
    ) -> OAuthToken:
        """An access token for `signed_in`, and a refresh token where the client registered for them and the
        sign-in can be renewed; both of `family`."""
        now = time.time()
        expires = min(now + self.token_seconds, signed_in.expires_at)
        if expires <= now:
            raise TokenError("invalid_grant", "The sign-in behind this grant has ended; sign in again.")
        held = self.held()
        data = json.dumps({"scopes": scopes, "resource": self.resource})

        def record(kind: str, until: float, sealed: str) -> dict[str, Any]:
            return {
                "kind": kind,
                "family": family,
                "client_id": client.client_id or "",
                "user_id": signed_in.user_id,
                "data": data,
                "sealed": sealed,
                "expires_at": until,
            }

        token = secrets.token_urlsafe(32)
        await held.add_grant(_digest(token), record("access", expires, _seal(token, signed_in.authorization)))
        refresh = None
        if signed_in.refresh and "refresh_token" in client.grant_types:
            refresh = secrets.token_urlsafe(32)
            await held.add_grant(_digest(refresh), record("refresh", now + REFRESH_SECONDS, signed_in.sealed(refresh)))
        scope = " ".join(scopes) or None
        return OAuthToken(access_token=token, expires_in=max(1, int(expires - now)), scope=scope, refresh_token=refresh)

    # -- tokens -----------------------------------------------------------------------------------------------------
    async def verify(self, token: str) -> tuple[AccessToken, str] | None:
        """(what the token is, the sign-in's `Authorization` value) for a live token this server issued."""
        if len(token) > 100:
            return None
        row = await self.held().grant(_digest(token), "access")
        if row is None:
            return None
        data = json.loads(row["data"])
        access = AccessToken(
            token="",  # the principal's identity, not the secret: kept in the request scope only
            client_id=str(row["client_id"]),
            scopes=data["scopes"],
            expires_at=int(float(row["expires_at"])),
            resource=data["resource"],
            subject=row["user_id"],
        )
        return access, _unseal(token, str(row["sealed"]))

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = await self.verify(token)
        return found[0] if found else None

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        """The live refresh token; a spent one presented again (a replay) ends its whole family here."""
        if len(refresh_token) > 100:
            return None
        held = self.held()
        row = await held.grant(_digest(refresh_token), "refresh")
        if row is None:
            await held.use_refresh(_digest(refresh_token))  # ends the family of a spent one; no-op otherwise
            return None
        if row["client_id"] != client.client_id:
            return None
        data = json.loads(row["data"])
        return RefreshToken(
            token=refresh_token,
            client_id=str(row["client_id"]),
            scopes=data["scopes"],
            expires_at=int(float(row["expires_at"])),
            resource=data["resource"],
            subject=row["user_id"],
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        """Rotated: the refresh token answers once (presented again, it ends its family); the managed pool
        renews the sign-in behind it (or refuses, once that session ended: signed out, disabled, expired)."""
        held = self.held()
        row, _ = await held.use_refresh(_digest(refresh_token.token))
        if row is None or row["client_id"] != client.client_id:
            raise TokenError("invalid_grant", "The refresh token is unknown or was used already.")
        subject, family = str(row["user_id"]), str(row["family"])
        before = SignedIn.unsealed(refresh_token.token, str(row["sealed"]), subject, 0.0)
        try:
            renewed = await self.renew(before.refresh)
        except SDKError:
            await held.end_family(family)
            raise TokenError("invalid_grant", "The sign-in behind this grant has ended; sign in again.") from None
        if renewed.user_id != subject:
            await held.end_family(family)
            raise TokenError("invalid_grant", "The sign-in behind this grant has changed; sign in again.")
        return await self._issue(client, scopes, renewed, family)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        return None  # revocation is not offered (the sign-in's session ends with `logout`)

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "The JWT bearer grant is not supported here.")


def _pending(row: Row) -> Pending:
    return Pending(
        str(row["client_id"]), AuthorizationParams.model_validate_json(row["data"]), float(row["expires_at"])
    )


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


def origin_of(uri: str) -> str | None:
    """`scheme://host[:port]` of an http(s) URI, else None."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None
