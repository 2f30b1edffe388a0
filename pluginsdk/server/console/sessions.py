"""The console's sessions: kept server-side, named by a random cookie value, each with its CSRF token.

A session holds the credential the caller signed in with (a managed-pool id token, also after a federated
sign-in, or an API key) in
memory only; every request re-authenticates it through the backend, so a revoked key or an ended token
stops the session at once. Signing out drops the session here and ends the token's session in the engine.
Sessions live in the serving process (one worker: `api.workers` 1; see docs/console.md).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field

__all__ = ["IDLE_SECONDS", "MAX_SECONDS", "Session", "Sessions"]

IDLE_SECONDS = 3600.0
"""A session unused this long ends."""
MAX_SECONDS = 12 * 3600.0
"""No session outlives this, whatever its credential's lifetime."""
_MAX_SESSIONS = 10000


@dataclass(slots=True)
class Session:
    authorization: str = field(repr=False)
    """The `Authorization` header value every call of this session presents."""
    user_id: str
    method: str
    """"password", "api-key" or "sso" (the identity provider)."""
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    expires: float = 0.0
    seen: float = field(default_factory=time.monotonic)

    def csrf_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.csrf.encode())


def _key(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


class Sessions:
    """Sessions by the SHA-256 of their cookie value (the value itself is never stored)."""

    def __init__(self) -> None:
        self._by_key: dict[str, Session] = {}

    def open(self, session: Session, lifetime: float | None = None) -> str:
        """Store `session`; its cookie value."""
        now = time.monotonic()
        session.expires = now + min(MAX_SECONDS, lifetime if lifetime else MAX_SECONDS)
        session.seen = now
        if len(self._by_key) >= _MAX_SESSIONS:
            self._purge(now)
            if len(self._by_key) >= _MAX_SESSIONS:  # the oldest-used goes
                del self._by_key[min(self._by_key, key=lambda k: self._by_key[k].seen)]
        cookie = secrets.token_urlsafe(32)
        self._by_key[_key(cookie)] = session
        return cookie

    def get(self, cookie: str | None) -> Session | None:
        if not cookie or len(cookie) > 100:
            return None
        key = _key(cookie)
        session = self._by_key.get(key)
        if session is None:
            return None
        now = time.monotonic()
        if now > session.expires or now - session.seen > IDLE_SECONDS:
            del self._by_key[key]
            return None
        session.seen = now
        return session

    def peek(self, cookie: str | None) -> Session | None:
        """The open session of `cookie`, without counting this as a use (an open stream is no activity)."""
        session = self._by_key.get(_key(cookie)) if cookie and len(cookie) <= 100 else None
        now = time.monotonic()
        if session is None or now > session.expires or now - session.seen > IDLE_SECONDS:
            return None
        return session

    def end(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        return self._by_key.pop(_key(cookie), None)

    def _purge(self, now: float) -> None:
        for key in [k for k, s in self._by_key.items() if now > s.expires or now - s.seen > IDLE_SECONDS]:
            del self._by_key[key]
