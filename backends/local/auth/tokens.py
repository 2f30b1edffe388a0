"""Tokens of the managed user pool: signing keys (EdDSA or RS256, by `kid`), JWT issue and check, JWKS.

Private keys are kept sealed (AES-GCM) in `auth_signing_keys`; the public
halves are published as a JWK Set. A token names its session (`sid`); the
session row decides revocation and the MFA flag, so sign-out, password
changes and user deletion bite on the next request.
"""

from __future__ import annotations

import json
import secrets
import uuid
from datetime import timedelta
from typing import Any

import jwt
from jwt.algorithms import OKPAlgorithm, RSAAlgorithm

from pluginsdk.config import ManagedPoolSettings
from pluginsdk.errors import AuthenticationError

from ..store.sealing import SecretBox
from .crypto import now, ts
from .store import AuthStore

__all__ = ["TokenService"]

_RELOAD_SECONDS = 30.0


class TokenService:
    """Issues and verifies the managed pool's id and access tokens."""

    def __init__(self, store: AuthStore, box: SecretBox, config: ManagedPoolSettings) -> None:
        self.store = store
        self.box = box
        self.config = config
        self._private: dict[str, tuple[str, Any]] = {}
        self._public: dict[str, tuple[str, Any]] = {}
        self._jwks: list[dict[str, Any]] = []
        self._signing_kid: str | None = None
        self._loaded_at = 0.0

    async def start(self) -> None:
        """Load the signing keys, making the first one when the store has none."""
        await self._load()
        if not any(alg == self.config.signingAlgorithm for alg, _ in self._private.values()):
            await self._create_key(self.config.signingAlgorithm)
            await self._load()

    async def _create_key(self, alg: str) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

        key: Any
        if alg == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
            public_jwk: dict[str, Any] = json.loads(OKPAlgorithm.to_jwk(key.public_key()))
        else:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            public_jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
        kid = secrets.token_urlsafe(12)
        public_jwk.update({"kid": kid, "alg": alg, "use": "sig"})
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
        await self.store.insert_signing_key(
            {
                "kid": kid,
                "alg": alg,
                "private_key": self.box.seal(pem, f"signing-key:{kid}"),
                "public_jwk": json.dumps(public_jwk),
                "created_at": ts(now()),
            }
        )

    async def _load(self) -> None:
        from cryptography.hazmat.primitives import serialization

        private: dict[str, tuple[str, Any]] = {}
        public: dict[str, tuple[str, Any]] = {}
        jwks: list[dict[str, Any]] = []
        signing: str | None = None
        for row in await self.store.signing_keys():
            kid, alg = row["kid"], row["alg"]
            pem = self.box.open(row["private_key"], f"signing-key:{kid}")
            key = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
            private[kid] = (alg, key)
            public[kid] = (alg, key.public_key())
            jwks.append(json.loads(row["public_jwk"]))
            if alg == self.config.signingAlgorithm:
                signing = kid  # newest of the configured algorithm signs
        self._private, self._public, self._jwks, self._signing_kid = private, public, jwks, signing
        self._loaded_at = now().timestamp()

    def jwks(self) -> list[dict[str, Any]]:
        return [dict(k) for k in self._jwks]

    def issue(self, *, user_id: str, email: str | None, session_id: str, mfa: bool) -> tuple[str, str, int]:
        """(id token, access token, lifetime seconds)."""
        assert self._signing_kid is not None
        alg, key = self._private[self._signing_kid]
        issued = now()
        lifetime = self.config.tokenMinutes * 60
        base = {
            "iss": self.config.issuer,
            "aud": self.config.appClientId,
            "sub": user_id,
            "username": user_id,
            "sid": session_id,
            "iat": int(issued.timestamp()),
            "exp": int((issued + timedelta(seconds=lifetime)).timestamp()),
            "amr": ["pwd", "otp"] if mfa else ["pwd"],
        }
        headers = {"kid": self._signing_kid}
        id_claims = {**base, "token_use": "id", "jti": str(uuid.uuid4())}
        if email:
            id_claims["email"] = email
        id_token = jwt.encode(id_claims, key, algorithm=alg, headers=headers)
        access = jwt.encode(
            {**base, "token_use": "access", "jti": str(uuid.uuid4())}, key, algorithm=alg, headers=headers
        )
        return id_token, access, lifetime

    async def verify(self, token: str) -> dict[str, Any]:
        """The claims of a valid token of ours; AuthenticationError otherwise (never says why in detail)."""
        invalid = AuthenticationError("The bearer token is invalid or expired; sign in again.")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise invalid from None
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise invalid
        if kid not in self._public and now().timestamp() - self._loaded_at > _RELOAD_SECONDS:
            await self._load()  # another process may have made a key
        found = self._public.get(kid)
        if found is None:
            raise invalid
        alg, key = found
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.config.appClientId,
                issuer=self.config.issuer,
                options={"require": ["exp", "iat", "sub", "iss", "aud", "sid"]},
            )
        except jwt.PyJWTError:
            raise invalid from None
        if claims.get("token_use") not in ("id", "access"):
            raise invalid
        return claims
