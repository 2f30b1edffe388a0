"""Sign-in limits: failed attempts counted per account name and per client address, and temporary locks.

The counts live in the store (`auth_sign_in_failures`: one row per key with its failures, when the count
started and until when the key is locked), so every process sharing the store counts together and agrees
on a lock. A key that reaches its limit within the window is locked for `lockSeconds` (audited once, when
it locks) and its count starts again. While the account name or the client is locked, a sign-in is
refused before any password is hashed. Names are counted whether or not such a user exists: an unknown
name locks exactly like a known one, so a lock says nothing about which accounts exist. A successful
sign-in clears its account's count (never the client's). Policy and defaults: docs/auth.md, "Sign-in limits".

Anonymous creations (a federated sign-in begun, and the server's registrations and sign-in pages) are
counted on the same table per client address (`created`, `store/held.py`'s `admit`): past `api.held`'s
rate they are refused 429 with the wait, before anything is kept.
"""

from __future__ import annotations

import math
import random
import time
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import TooManyRequestsError

from .crypto import ts

if TYPE_CHECKING:
    from pluginsdk.config import HeldSettings, SignInLimitsSettings

    from .store import AuthStore

__all__ = ["SignInThrottle"]

_SWEEP_CHANCE = 1 / 64
"""How often a failure also deletes rows whose count and lock have run out (the table stays small)."""


class SignInThrottle:
    """Counts failed sign-ins in the store and refuses attempts while the account or client is locked."""

    def __init__(self, store: AuthStore, limits: SignInLimitsSettings, held: HeldSettings | None = None) -> None:
        self.store = store
        self.limits = limits
        self.held = held

    async def created(self, kind: str, client: str | None) -> None:
        """Count one anonymous creation of `kind` from `client`; TooManyRequestsError past `api.held`'s rate."""
        if self.held is None:
            return
        from ..store.held import HeldStore

        wait = await HeldStore(self.store.db, self.held).admit(
            kind, client, self.held.creations_per_window, self.held.creation_window_seconds
        )
        if wait > 0:
            seconds = math.ceil(wait)
            raise TooManyRequestsError(
                f"Too many sign-ins begun from this address; try again in {seconds} s.",
                details={"retry_after": seconds},
            )

    def _keys(self, user_id: str, client: str | None) -> list[tuple[str, int, tuple[str, str]]]:
        """(store key, limit, audit target) of the account name and, when known, the client address."""
        keys = [("user:" + user_id, self.limits.accountFailures, ("managedUser", user_id))]
        if client:
            keys.append(("client:" + client, self.limits.clientFailures, ("client", client)))
        return keys

    async def check(self, user_id: str, client: str | None = None) -> None:
        """Raise TooManyRequestsError while the account name or the client is locked."""
        locks = await self.store.sign_in_locks([k for k, _, _ in self._keys(user_id, client)])
        moment = time.time()
        wait = max((until - moment for until in locks), default=0.0)
        if wait > 0:
            raise TooManyRequestsError(
                f"Too many failed sign-in attempts; try again in {math.ceil(wait)} s.",
                details={"retry_after": math.ceil(wait)},
            )

    async def failed(self, user_id: str, client: str | None = None, *, actor: str = "anonymous", kind: str) -> None:
        """Count one failure (`kind`: password or totp) against the account name and the client; lock a key
        that reaches its limit, and audit that lock."""
        moment = time.time()
        start = moment - self.limits.failureWindowSeconds
        until = moment + self.limits.lockSeconds
        async with self.store.transaction():
            for key, limit, target in self._keys(user_id, client):
                if await self.store.count_sign_in_failure(key, moment, start) < limit:
                    continue
                if await self.store.lock_sign_in(key, moment, until, limit):
                    after = self._lock(limit, until, kind, client)
                    await self.store.append_audit(actor=actor, action="sign_in_locked", target=target, after=after)
            if random.random() < _SWEEP_CHANCE:  # housekeeping, not security
                await self.store.sweep_sign_in_failures(start, moment)

    async def succeeded(self, user_id: str) -> None:
        """A sign-in of `user_id` succeeded: its account count starts again."""
        await self.store.clear_sign_in_failures("user:" + user_id)

    def _lock(self, limit: int, until: float, kind: str, client: str | None) -> dict[str, Any]:
        from datetime import UTC, datetime

        return {
            "failures": limit,
            "kind": kind,
            "lockedUntil": ts(datetime.fromtimestamp(until, UTC)),
            "lockSeconds": self.limits.lockSeconds,
            "client": client,
        }
