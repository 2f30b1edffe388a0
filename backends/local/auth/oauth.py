"""Tokens of an external OAuth identity provider, verified against its JWKS.

The key set is fetched from the configured URL and cached for
`jwksCacheSeconds`; a token naming an unknown `kid` triggers one refetch, at
most every `jwksMinRefreshSeconds` (key rotation without a call per request).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jwt

from pluginsdk.config import ExternalIdpSettings
from pluginsdk.errors import AuthenticationError
from pluginsdk.principal import Principal

__all__ = ["ExternalVerifier"]


class ExternalVerifier:
    """Verifies the IdP's JWTs and turns them into principals."""

    def __init__(self, config: ExternalIdpSettings) -> None:
        self.config = config
        self._keys: dict[str, Any] = {}
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0
        """How many times the key set was downloaded (observability, tests)."""

    async def _fetch(self) -> None:
        import httpx

        self.fetches += 1
        try:
            async with httpx.AsyncClient(timeout=self.config.httpTimeout, follow_redirects=False) as client:
                resp = await client.get(self.config.jwksUrl)
                resp.raise_for_status()
                data = resp.json()
        except (httpx.HTTPError, ValueError):
            self._fetched_at = time.monotonic()  # do not hammer a failing IdP
            raise AuthenticationError("The identity provider's signing keys are unavailable; try again.") from None
        keys: dict[str, Any] = {}
        for jwk in data.get("keys", []) if isinstance(data, dict) else []:
            try:
                parsed = jwt.PyJWK.from_json(json.dumps(jwk))
            except (jwt.PyJWTError, ValueError, TypeError):
                continue
            if parsed.key_id:
                keys[parsed.key_id] = parsed
        self._keys = keys
        self._fetched_at = time.monotonic()

    async def _key(self, kid: str) -> Any:
        age = time.monotonic() - self._fetched_at
        if kid in self._keys and age < self.config.jwksCacheSeconds:
            return self._keys[kid]
        async with self._lock:
            age = time.monotonic() - self._fetched_at
            stale = age >= self.config.jwksCacheSeconds
            if stale or (kid not in self._keys and age >= self.config.jwksMinRefreshSeconds):
                await self._fetch()
        return self._keys.get(kid)

    async def principal(self, token: str) -> Principal:
        invalid = AuthenticationError("The bearer token is invalid or expired; sign in again.")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise invalid from None
        kid, alg = header.get("kid"), header.get("alg")
        if not isinstance(kid, str) or alg not in self.config.algorithms:
            raise invalid
        key = await self._key(kid)
        if key is None:
            raise invalid
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.config.audience or self.config.clientId,
                issuer=self.config.issuer,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            raise invalid from None
        user_id = claims.get(self.config.userIdClaim)
        if not isinstance(user_id, str) or not user_id:
            raise invalid
        amr = claims.get(self.config.mfaClaim)
        values = amr if isinstance(amr, list) else [amr] if isinstance(amr, str) else []
        mfa = any(v in self.config.mfaValues for v in values)
        email = claims.get(self.config.emailClaim)
        return Principal(
            user_id=user_id,
            mfa=mfa,
            auth_method="oauth",
            email=email if isinstance(email, str) else None,
            claims=claims,
        )
