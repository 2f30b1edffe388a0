"""Secrets the server hands out and keeps only hashed, and what they unlock, sealed under them.

A session cookie, an OAuth code or token is kept by its SHA-256 (`digest`); the credential it stands for
(an `Authorization` value, a refresh token) is sealed (AES-GCM) under a key derived from the secret itself
(`seal`), so the store holds nothing a copy of it could use: only the caller presenting the secret opens it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["derive", "digest", "seal", "unseal"]


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def derive(secret: str, purpose: bytes) -> bytes:
    """A key (or token) for `purpose` derived from `secret`: HMAC-SHA256."""
    return hmac.new(secret.encode(), purpose, hashlib.sha256).digest()


def seal(secret: str, plain: str, purpose: bytes = b"pluginsdk-oauth-seal") -> str:
    """`plain` encrypted under a key derived from `secret` (which is never stored), as text."""
    nonce = os.urandom(12)
    sealed = nonce + AESGCM(derive(secret, purpose)).encrypt(nonce, plain.encode(), None)
    return base64.b64encode(sealed).decode()


def unseal(secret: str, sealed: str, purpose: bytes = b"pluginsdk-oauth-seal") -> str:
    """What `seal` sealed; raises `cryptography.exceptions.InvalidTag` under another secret."""
    raw = base64.b64decode(sealed)
    return AESGCM(derive(secret, purpose)).decrypt(raw[:12], raw[12:], None).decode()
