"""Secrets handling: API keys, hashes, passwords, encryption at rest, opaque page tokens.

Nothing here logs; no function puts a secret in an exception message.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import string
from collections.abc import Callable
from datetime import UTC, date, datetime, time
from typing import Any, TypeVar

from pluginsdk.constants import API_KEY_PREFIX
from pluginsdk.errors import InvalidPaginationToken, TooManyRequestsError, ValidationError

__all__ = [
    "PageTokens",
    "Passwords",
    "derive_key",
    "new_api_key",
    "new_refresh_token",
    "now",
    "parse_expiry",
    "parse_ts",
    "sha256_hex",
    "temporary_password",
    "ts",
]

T = TypeVar("T")

API_KEY_BYTES = 32
"""256 bits of randomness after the prefix."""


def now() -> datetime:
    return datetime.now(UTC)


def ts(dt: datetime) -> str:
    """Fixed-width UTC ISO 8601 (sorts as text)."""
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def b64e(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sha256_hex(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_api_key() -> str:
    """`psdk_` + 256 random bits (base64url)."""
    return API_KEY_PREFIX + secrets.token_urlsafe(API_KEY_BYTES)


def new_refresh_token() -> str:
    return "rt." + secrets.token_urlsafe(48)


def temporary_password(length: int = 20) -> str:
    """A random password with upper and lower case letters, digits and a symbol."""
    symbols = "!#%+-=?@^_"
    alphabet = string.ascii_letters + string.digits + symbols
    while True:
        pw = "".join(secrets.choice(alphabet) for _ in range(length))
        if (
            any(c.islower() for c in pw)
            and any(c.isupper() for c in pw)
            and any(c.isdigit() for c in pw)
            and any(c in symbols for c in pw)
        ):
            return pw


def parse_expiry(value: str, field: str = "expires_at") -> datetime:
    """ISO 8601 with a time zone, or a date alone (the end of that day, UTC); naive times are rejected."""
    text = value.strip()
    bad = ValidationError(
        f"'{field}' must be an ISO 8601 date-time with a time zone (e.g. 2030-01-31T12:00:00Z) or a date.",
        details={"field": field, "value": value[:64], "expected": "ISO 8601 with time zone, or YYYY-MM-DD"},
    )
    if len(text) == 10:
        try:
            d = date.fromisoformat(text)
        except ValueError:
            raise bad from None
        return datetime.combine(d, time(23, 59, 59, 999999), tzinfo=UTC)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise bad from None
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValidationError(
            f"'{field}' needs a time zone (add Z or +00:00): a time without one is ambiguous.",
            details={"field": field, "value": value[:64], "expected": "ISO 8601 with time zone"},
        )
    return dt.astimezone(UTC)


def derive_key(key: bytes, label: str, salt: bytes = b"") -> bytes:
    """A 32-byte sub-key of `key` for one purpose (HMAC-SHA256; stdlib only, so starting costs no import).

    The pagination secret is derived this way from the sealing key and a per-store salt: the salt in the
    store alone is worthless, and rotating the sealing key retires outstanding page tokens too.
    """
    return hmac.new(key, b"pluginsdk/" + label.encode("utf-8") + b"\x00" + salt, hashlib.sha256).digest()


class Passwords:
    """argon2id hashing with the configured cost, `concurrency` hashes at a time in this process.

    Each hash takes `memory_kib` for its duration, so unbounded concurrent sign-ins would grow the process
    without limit and make every sign-in wait: at most `concurrency` run at once, at most `queue` more wait
    for a slot, and any further caller is refused at once (`TooManyRequestsError`, retry after 1 s).
    """

    def __init__(self, time_cost: int, memory_kib: int, parallelism: int, concurrency: int = 2, queue: int = 8) -> None:
        from argon2 import PasswordHasher

        self._ph = PasswordHasher(time_cost=time_cost, memory_cost=memory_kib, parallelism=parallelism)
        self._dummy = self._ph.hash(secrets.token_urlsafe(16))
        self._slots = asyncio.Semaphore(concurrency)
        self._admitted = 0
        self._bound = concurrency + queue

    def hash(self, password: str) -> str:
        return str(self._ph.hash(password))

    def verify(self, stored: str | None, password: str) -> bool:
        """True on a match; with no stored hash it still spends the same time (no user-enumeration timing)."""
        from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

        try:
            return bool(self._ph.verify(stored or self._dummy, password)) and stored is not None
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    async def ahash(self, password: str) -> str:
        """`hash` off the event loop, within the bound."""
        return await self._bounded(self.hash, password)

    async def averify(self, stored: str | None, password: str) -> bool:
        """`verify` off the event loop, within the bound."""
        return await self._bounded(self.verify, stored, password)

    async def _bounded(self, fn: Callable[..., T], *args: Any) -> T:
        if self._admitted >= self._bound:
            raise TooManyRequestsError(
                "The server is busy checking passwords; try again in a moment.", details={"retry_after": 1}
            )
        self._admitted += 1
        try:
            await self._slots.acquire()
            # the slot is released when the thread ends, not when a cancelled caller leaves: a hash still
            # running keeps its memory, so it keeps its slot
            work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
            work.add_done_callback(lambda _: self._slots.release())
            return await asyncio.shield(work)
        finally:
            self._admitted -= 1


class PageTokens:
    """Opaque pagination tokens: a position, bound to one listing, signed with the store's secret."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _sig(self, listing: str, payload: bytes) -> bytes:
        return hmac.new(self._secret, listing.encode("utf-8") + b"\x00" + payload, hashlib.sha256).digest()[:16]

    def encode(self, listing: str, position: dict[str, Any]) -> str:
        payload = json.dumps(position, separators=(",", ":"), sort_keys=True).encode("utf-8")
        return b64e(payload) + "." + b64e(self._sig(listing, payload))

    def decode(self, listing: str, token: str) -> dict[str, Any]:
        """The position; InvalidPaginationToken for anything this listing did not emit."""
        try:
            body, _, sig = token.partition(".")
            payload = b64d(body)
            if not hmac.compare_digest(b64d(sig), self._sig(listing, payload)):
                raise ValueError("signature")
            position = json.loads(payload)
            if not isinstance(position, dict):
                raise ValueError("shape")
        except (ValueError, TypeError, UnicodeDecodeError, json.JSONDecodeError):
            raise InvalidPaginationToken(details={"field": "startingToken"}) from None
        return position
