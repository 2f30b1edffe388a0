"""The console's sessions: rows of the backend's store, named by a random cookie value, each with its CSRF token.

A session holds the credential the caller signed in with (a managed-pool id token, also after a federated
sign-in, or an API key), sealed under a key derived from the cookie value, which is stored only as its
SHA-256 (`pluginsdk/server/_sealed.py`); its CSRF token is derived from the cookie too, so nothing else is
kept. Every request reads the session from the store and re-authenticates its credential through the
backend, so a sign-out, a revoked key or an ended token stops it at the next call on every server, and a
restart signs no one out. Bounds (`api.held`, docs/input.md): sessions expire by time; a user holds at most
`sessions_per_user` (signing in again ends their own oldest); console sign-ins are rate-limited per client
address.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...errors import TooManyRequestsError
from .._sealed import derive, digest, seal, unseal

if TYPE_CHECKING:
    from ..contract import HeldState, ServedBackend

__all__ = ["IDLE_SECONDS", "MAX_SECONDS", "Session", "Sessions", "admit"]

IDLE_SECONDS = 3600.0
"""A session unused this long ends."""
MAX_SECONDS = 12 * 3600.0
"""No session outlives this, whatever its credential's lifetime."""
_IN_USE = 10_000
"""`Session` objects this process keeps for the cookies its requests use (past it, ended ones go first)."""
_PURPOSE = b"pluginsdk-console-session"
_CSRF = b"pluginsdk-console-csrf"


@dataclass(slots=True)
class Session:
    authorization: str = field(repr=False)
    """The `Authorization` header value every call of this session presents."""
    user_id: str
    method: str
    """"password", "api-key" or "sso" (the identity provider)."""
    csrf: str = field(default="", repr=False)
    """Derived from the cookie value (never stored)."""
    expires: float = 0.0
    """Wall-clock time (the store's) after which the session is over."""

    def csrf_ok(self, token: str | None) -> bool:
        return bool(self.csrf) and token is not None and hmac.compare_digest(token.encode(), self.csrf.encode())


def _valid(cookie: str | None) -> bool:
    return bool(cookie) and len(cookie or "") <= 100


async def admit(held: HeldState, kind: str, client: str | None) -> None:
    """Count one anonymous creation of `kind` from `client`; TooManyRequestsError (429) past `api.held`'s rate."""
    limits = held.limits
    wait = await held.admit(kind, client, limits.creations_per_window, limits.creation_window_seconds)
    if wait > 0:
        seconds = max(1, int(wait + 0.999))
        raise TooManyRequestsError(
            f"Too many attempts from this address; try again in {seconds} s.", details={"retry_after": seconds}
        )


class Sessions:
    """The console's sessions in the store, by the SHA-256 of their cookie value."""

    def __init__(self, backend: ServedBackend) -> None:
        self.backend = backend
        self._live: dict[str, Session] = {}
        """The one `Session` object per cookie this process's requests and streams share (an identity, not the
        truth: every request reads the store). Dropping one costs only a stream's reconnect."""

    async def admit(self, client: str | None) -> None:
        """A console sign-in attempt from `client` (rate-limited per address; 429 past it)."""
        await admit(self.backend.held(), "console-signin", client)

    async def open(self, session: Session, lifetime: float | None = None, client: str | None = None) -> str:
        """Store `session` (the user's own oldest ends past their cap); its cookie value."""
        held = self.backend.held()
        cookie = secrets.token_urlsafe(32)
        session.expires = time.time() + min(MAX_SECONDS, lifetime if lifetime else MAX_SECONDS)
        session.csrf = _csrf(cookie)
        row = {
            "user_id": session.user_id,
            "method": session.method,
            "client": client or "-",
            "sealed": seal(cookie, session.authorization, _PURPOSE),
            "expires_at": session.expires,
        }
        await held.open_session(digest(cookie), row, held.limits.sessions_per_user)
        return cookie

    async def get(self, cookie: str | None, *, touch: bool = True) -> Session | None:
        """The live session of `cookie` from the store (its use noted when `touch`), or None."""
        if not _valid(cookie):
            return None
        assert cookie is not None
        key = digest(cookie)
        row = await self.backend.held().session(key, IDLE_SECONDS, touch=touch)
        if row is None:
            self._live.pop(key, None)
            return None
        found = self._live.get(key)
        if found is not None and found.user_id == row["user_id"]:
            found.expires = float(row["expires_at"])
            return found
        if len(self._live) >= _IN_USE:
            self._forget()
        authorization = unseal(cookie, str(row["sealed"]), _PURPOSE)
        session = Session(
            authorization, str(row["user_id"]), str(row["method"]), _csrf(cookie), float(row["expires_at"])
        )
        self._live[key] = session
        return session

    def _forget(self) -> None:
        """Room in `_live`: the expired objects, else the older half (their next request makes them again)."""
        now = time.time()
        ended = [k for k, s in self._live.items() if s.expires <= now]
        for key in ended or list(self._live)[: _IN_USE // 2]:
            del self._live[key]

    async def alive(self, cookie: str | None) -> bool:
        """Whether `cookie`'s session is still open in the store, without counting a use (an open stream)."""
        return await self.get(cookie, touch=False) is not None

    async def end(self, cookie: str | None) -> None:
        if not _valid(cookie):
            return
        assert cookie is not None
        key = digest(cookie)
        self._live.pop(key, None)
        await self.backend.held().end_session(key)


def _csrf(cookie: str) -> str:
    return base64.urlsafe_b64encode(derive(cookie, _CSRF)).decode().rstrip("=")
