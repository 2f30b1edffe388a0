"""Tokens of an external OAuth identity provider, verified against its JWKS; its discovery document.

The key set is fetched from the configured URL (else the discovery document's `jwks_uri`) and cached for
`jwksCacheSeconds`; a token naming an unknown `kid` triggers one refetch, at most every
`jwksMinRefreshSeconds` (key rotation without a call per request). A token without `kid` is checked against
the key set's only key (OpenID Connect Core 10.1, RFC 7515 4.1.4 make `kid` optional); with several keys it
is refused, saying so (which key would be a guess). `exp`, `iat` and `nbf` are checked with
`clockSkewSeconds` of leeway. The same verification serves bearer tokens and the ID tokens of OIDC sign-in.
A token that passed is remembered until it expires (a client presents the same bearer token on every
request): the next check of it is a lookup; a new key set forgets them all.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from typing import Any

import jwt

from pluginsdk.config import ExternalIdpSettings
from pluginsdk.errors import AuthenticationError
from pluginsdk.principal import Principal

__all__ = ["Discovery", "ExternalVerifier", "token_header"]

_REMEMBERED = 4096
"""Tokens that passed, kept at once (cleared when full)."""


def token_header(token: str) -> dict[str, Any] | None:
    """A JWT's header, read to choose the key (`kid`, `alg`) before anything is checked; None when it is not
    one. `jwt.decode` then reads the whole token again, checking every segment's encoding (PyJWT's own
    header reader checks them too, at a cost per character that would double a check's time)."""
    head = token.partition(".")[0]
    if not head or len(head) > 4096:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error):
        return None
    return data if isinstance(data, dict) else None


async def _get_json(url: str, seconds: float, what: str) -> Any:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=seconds, follow_redirects=False) as client:
            resp = await client.get(url, headers={"accept": "application/json"})
            resp.raise_for_status()
            return resp.json()
    except (httpx.HTTPError, ValueError):
        raise AuthenticationError(f"The identity provider's {what} is unavailable; try again.") from None


class Discovery:
    """The IdP's OpenID discovery document (cached like its keys); configured endpoints win over it."""

    def __init__(self, config: ExternalIdpSettings) -> None:
        self.config = config
        self._doc: dict[str, Any] = {}
        self._fetched_at = -1e18
        self._lock = asyncio.Lock()

    async def document(self) -> dict[str, Any]:
        """The document, with `issuer` checked against the configured one (OpenID Connect Discovery 4.3)."""
        if not self.config.discoveryEndpoint:
            return {}
        if time.monotonic() - self._fetched_at < self.config.jwksCacheSeconds:
            return self._doc
        async with self._lock:
            if time.monotonic() - self._fetched_at >= self.config.jwksCacheSeconds:
                data = await _get_json(self.config.discoveryEndpoint, self.config.httpTimeout, "discovery document")
                if not isinstance(data, dict) or data.get("issuer") != self.config.issuer:
                    raise AuthenticationError(
                        "The identity provider's discovery document names another issuer than "
                        "app.authProvider.useExternalOAuthIdp.issuer."
                    )
                self._doc, self._fetched_at = data, time.monotonic()
        return self._doc

    async def endpoint(self, name: str) -> str | None:
        """`authorization_endpoint`, `token_endpoint`, `jwks_uri` or `end_session_endpoint`: configured, else
        the document's."""
        configured = {
            "authorization_endpoint": self.config.authorizationEndpoint,
            "token_endpoint": self.config.tokenEndpoint,
            "jwks_uri": self.config.jwksUrl,
        }.get(name)
        if configured:
            return configured
        value = (await self.document()).get(name)
        return value if isinstance(value, str) and value else None


class ExternalVerifier:
    """Verifies the IdP's JWTs and turns them into principals."""

    def __init__(self, config: ExternalIdpSettings, discovery: Discovery | None = None) -> None:
        self.config = config
        self.discovery = discovery or Discovery(config)
        self._keys: dict[str, Any] = {}
        self._only: Any = None
        """The key set's key when it holds exactly one (a token without `kid` is checked against it)."""
        self._count = 0
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0
        """How many times the key set was downloaded (observability, tests)."""
        self.verified: dict[tuple[str, tuple[str, ...]], tuple[dict[str, Any], float]] = {}
        """(token, claims required) -> (its claims, when it stops being valid): tokens that passed."""

    async def _fetch(self) -> None:
        self.fetches += 1
        self.verified.clear()
        try:
            url = await self.discovery.endpoint("jwks_uri")
            if url is None:
                raise AuthenticationError("The identity provider publishes no key set (jwks_uri).")
            data = await _get_json(url, self.config.httpTimeout, "signing keys")
        except AuthenticationError:
            self._fetched_at = time.monotonic()  # do not hammer a failing IdP
            raise
        keys: dict[str, Any] = {}
        signing: list[Any] = []
        for jwk in data.get("keys", []) if isinstance(data, dict) else []:
            if isinstance(jwk, dict) and jwk.get("use", "sig") != "sig":
                continue  # an encryption key never signs
            try:
                parsed = jwt.PyJWK.from_json(json.dumps(jwk))
            except (jwt.PyJWTError, ValueError, TypeError):
                continue
            signing.append(parsed)
            if parsed.key_id:
                keys[parsed.key_id] = parsed
        self._keys, self._count = keys, len(signing)
        self._only = signing[0] if len(signing) == 1 else None
        self._fetched_at = time.monotonic()

    async def _key(self, kid: str | None) -> Any:
        """The key `kid` names; for a token without one, the set's only key (None when the set has several:
        `unnamed_refusal` says why)."""
        age = time.monotonic() - self._fetched_at
        if kid is not None and kid in self._keys and age < self.config.jwksCacheSeconds:
            return self._keys[kid]
        if kid is None and self._only is not None and age < self.config.jwksCacheSeconds:
            return self._only
        async with self._lock:
            age = time.monotonic() - self._fetched_at
            stale = age >= self.config.jwksCacheSeconds
            unknown = self._only is None if kid is None else kid not in self._keys
            if stale or (unknown and age >= self.config.jwksMinRefreshSeconds):
                await self._fetch()
        return self._only if kid is None else self._keys.get(kid)

    async def claims(self, token: str, require: tuple[str, ...] = ("exp", "iss", "aud")) -> dict[str, Any]:
        """The claims of a token the IdP signed for us (`iss`, `aud`, `exp`, `iat`, `nbf` checked, with the clock
        skew allowed); AuthenticationError otherwise, never saying why in detail."""
        seen = self.verified.get((token, require))
        if seen is not None and time.time() < seen[1]:
            return dict(seen[0])
        invalid = AuthenticationError("The bearer token is invalid or expired; sign in again.")
        header = token_header(token)
        if header is None:
            raise invalid
        kid, alg = header.get("kid"), header.get("alg")
        if not (kid is None or isinstance(kid, str)) or alg not in self.config.algorithms:
            raise invalid
        key = await self._key(kid)
        if key is None and kid is None and self._count > 1:
            raise AuthenticationError(
                "The token names no signing key (kid) and the identity provider publishes "
                f"{self._count} keys: which one signed it cannot be told; the provider must set kid."
            )
        if key is None:
            raise invalid
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.config.audience or self.config.clientId,
                issuer=self.config.issuer,
                leeway=self.config.clockSkewSeconds,
                options={"require": list(require)},
            )
        except jwt.PyJWTError:
            raise invalid from None
        self._remember(token, require, claims)
        return claims

    def _remember(self, token: str, require: tuple[str, ...], claims: dict[str, Any]) -> None:
        """Keep a token that passed until its `exp` (and the leeway) is past; one without `exp` is not kept."""
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or len(token) > 8192:
            return
        if len(self.verified) >= _REMEMBERED:
            self.verified.clear()
        self.verified[(token, require)] = (dict(claims), float(exp) + self.config.clockSkewSeconds)

    async def principal(self, token: str) -> Principal:
        claims = await self.claims(token)
        user_id = claims.get(self.config.userIdClaim)
        if not isinstance(user_id, str) or not user_id:
            raise AuthenticationError("The bearer token is invalid or expired; sign in again.")
        email = claims.get(self.config.emailClaim)
        return Principal(
            user_id=user_id,
            mfa=self.mfa(claims),
            auth_method="oauth",
            email=email if isinstance(email, str) else None,
            claims=claims,
        )

    def mfa(self, claims: dict[str, Any]) -> bool:
        """Whether the claims say the user proved a second factor (`mfaClaim` holds one of `mfaValues`)."""
        amr = claims.get(self.config.mfaClaim)
        values = amr if isinstance(amr, list) else [amr] if isinstance(amr, str) else []
        return any(v in self.config.mfaValues for v in values)
