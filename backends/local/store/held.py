"""What the server's faces hold between requests, as rows every server on the store shares (migration 15).

Console sessions (`held_sessions`), the OAuth clients /mcp's authorization server registered
(`oauth_clients`) and its grants (`oauth_grants`: pending authorizations, codes, access and refresh tokens,
one family per sign-in) live here, not in a process, so any server or worker answers any request and a
restart signs no one out. Each secret is keyed by its SHA-256 (the caller hashes it); a credential that
must be recovered is sealed by the caller under a key derived from the secret itself, so a copy of the
store unlocks nothing.

Bounds never end what someone else holds: rows expire by time, a user's own oldest sessions or grant
families end past their cap, and anonymous creation is counted per client address (`admit`, on the sign-in
limits' table `auth_sign_in_failures`, keys `create:<kind>:<address>`) and refused past its rate.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .db import Database, Row

if TYPE_CHECKING:
    from pluginsdk.config import HeldSettings

__all__ = ["HeldStore"]

_SWEEP_CHANCE = 1 / 64
"""How often a counted creation also deletes the counts whose window ran out (the table stays small)."""
_TOUCH_SECONDS = 30.0
"""A session's last use is written at most this often (idle expiry is that coarse; a read stays a read)."""


class HeldStore:
    """The SQL of the held tables; the server reaches it through `ServedBackend.held()` (`HeldState`)."""

    def __init__(self, db: Database, limits: HeldSettings) -> None:
        self.db = db
        self.limits = limits
        self.clock: Callable[[], float] = time.time

    # -- anonymous creation, counted per address ------------------------------------------------------------------
    async def admit(self, kind: str, client: str | None, limit: int, window: float) -> float:
        """Count one creation of `kind` from `client`: 0 while within `limit` per `window` seconds, else the
        seconds until the window lets another one in (nothing is counted then)."""
        now = self.clock()
        row = await self.db.fetchone(
            "INSERT INTO auth_sign_in_failures (key, failures, first_at, locked_until) VALUES (:k, 1, :now, NULL)"
            " ON CONFLICT (key) DO UPDATE SET"
            " failures = CASE WHEN auth_sign_in_failures.first_at <= :start THEN 1"
            " WHEN auth_sign_in_failures.failures >= :limit THEN auth_sign_in_failures.failures"
            " ELSE auth_sign_in_failures.failures + 1 END,"
            " first_at = CASE WHEN auth_sign_in_failures.first_at <= :start THEN :now"
            " ELSE auth_sign_in_failures.first_at END"
            " RETURNING failures, first_at",
            {"k": f"create:{kind}:{client or '-'}", "now": now, "start": now - window, "limit": limit + 1},
        )
        if random.random() < _SWEEP_CHANCE:  # housekeeping: counts whose window ran out
            await self.db.execute(
                "DELETE FROM auth_sign_in_failures WHERE key LIKE 'create:%' AND first_at <= :start",
                {"start": now - window},
            )
        if row is None or int(row["failures"]) <= limit:
            return 0.0
        return max(float(row["first_at"]) + window - now, 1.0)

    # -- console sessions -------------------------------------------------------------------------------------------
    async def open_session(self, key: str, row: dict[str, Any], per_user: int) -> None:
        """Keep a session (`row`: user_id, method, client, sealed, expires_at); the user's own oldest sessions
        end past `per_user`, and expired ones of anyone go."""
        now = self.clock()
        async with self.db.transaction():
            await self.db.execute("DELETE FROM held_sessions WHERE expires_at <= :now", {"now": now})
            await self._keep_newest("held_sessions", "session_hash", row["user_id"], per_user - 1)
            await self.db.execute(
                "INSERT INTO held_sessions (session_hash, user_id, method, client, sealed, created_at, seen_at,"
                " expires_at) VALUES (:k, :user_id, :method, :client, :sealed, :now, :now, :expires_at)",
                {**row, "k": key, "now": now},
            )

    async def session(self, key: str, idle: float, *, touch: bool = True) -> Row | None:
        """The live session `key` (its last use noted when `touch`), or None; an idle or expired one is ended."""
        now = self.clock()
        row = await self.db.fetchone("SELECT * FROM held_sessions WHERE session_hash = :k", {"k": key})
        if row is None:
            return None
        if float(row["expires_at"]) <= now or float(row["seen_at"]) + idle <= now:
            await self.end_session(key)
            return None
        if touch and float(row["seen_at"]) + _TOUCH_SECONDS <= now:
            await self.db.execute(
                "UPDATE held_sessions SET seen_at = :now WHERE session_hash = :k", {"k": key, "now": now}
            )
        return row

    async def end_session(self, key: str) -> None:
        await self.db.execute("DELETE FROM held_sessions WHERE session_hash = :k", {"k": key})

    # -- OAuth clients ----------------------------------------------------------------------------------------------
    async def add_client(self, client_id: str, data: str, client: str | None, per_address: int, idle: float) -> bool:
        """Register a client; False when `client` (the address) holds `per_address` live registrations already.
        Registrations unused for `idle` seconds go."""
        now = self.clock()
        address = client or "-"
        async with self.db.transaction():
            await self.db.execute("DELETE FROM oauth_clients WHERE used_at <= :t", {"t": now - idle})
            row = await self.db.fetchone("SELECT COUNT(*) AS n FROM oauth_clients WHERE client = :c", {"c": address})
            if row is not None and int(row["n"]) >= per_address:
                return False
            await self.db.execute(
                "INSERT INTO oauth_clients (client_id, data, client, created_at, used_at) VALUES (:i, :d, :c, :t, :t)",
                {"i": client_id, "d": data, "c": address, "t": now},
            )
        return True

    async def client(self, client_id: str) -> str | None:
        """A registered client's metadata (JSON, its secret hashed), or None."""
        row = await self.db.fetchone("SELECT data FROM oauth_clients WHERE client_id = :i", {"i": client_id})
        return None if row is None else str(row["data"])

    async def touch_client(self, client_id: str) -> None:
        """The client was used (a sign-in completed): its idle expiry starts again."""
        await self.db.execute(
            "UPDATE oauth_clients SET used_at = :t WHERE client_id = :i", {"i": client_id, "t": self.clock()}
        )

    # -- OAuth grants -----------------------------------------------------------------------------------------------
    async def add_grant(self, key: str, row: dict[str, Any], *, per_user: int = 0, per_address: int = 0) -> bool:
        """Keep a grant (`row`: kind, family, client_id, user_id, client, data, sealed, expires_at). With
        `per_user`, the user's own oldest families end so this one is at most the `per_user`-th; with
        `per_address`, False when the address holds that many live grants of this kind already."""
        now = self.clock()
        async with self.db.transaction():
            await self.db.execute("DELETE FROM oauth_grants WHERE expires_at <= :now", {"now": now})
            if per_address:
                found = await self.db.fetchone(
                    "SELECT COUNT(*) AS n FROM oauth_grants WHERE client = :c AND kind = :kind",
                    {"c": row.get("client") or "-", "kind": row["kind"]},
                )
                if found is not None and int(found["n"]) >= per_address:
                    return False
            if per_user and row.get("user_id"):
                await self._end_oldest_families(str(row["user_id"]), str(row["family"]), per_user - 1)
            await self.db.execute(
                "INSERT INTO oauth_grants (grant_hash, kind, family, client_id, user_id, client, data, sealed,"
                " created_at, expires_at, used) VALUES (:k, :kind, :family, :client_id, :user_id, :client, :data,"
                " :sealed, :now, :expires_at, 0)",
                {"user_id": None, "client": None, "sealed": None, **row, "k": key, "now": now},
            )
        return True

    async def grant(self, key: str, kind: str) -> Row | None:
        """The live, unused grant `key` of `kind`, or None."""
        row = await self.db.fetchone(
            "SELECT * FROM oauth_grants WHERE grant_hash = :k AND kind = :kind AND used = 0 AND expires_at > :now",
            {"k": key, "kind": kind, "now": self.clock()},
        )
        return row

    async def take_grant(self, key: str, kind: str) -> Row | None:
        """The grant `key` of `kind`, removed (single use: a code, a pending authorization), if live."""
        row = await self.db.fetchone(
            "DELETE FROM oauth_grants WHERE grant_hash = :k AND kind = :kind RETURNING *", {"k": key, "kind": kind}
        )
        if row is None or float(row["expires_at"]) <= self.clock():
            return None
        return row

    async def use_refresh(self, key: str) -> tuple[Row | None, bool]:
        """Spend the refresh token `key`: (its row, False) the first time; (None, True) when it was spent before —
        a replay, and its whole family (every token of that sign-in) is ended; (None, False) when unknown."""
        now = self.clock()
        row = await self.db.fetchone(
            "UPDATE oauth_grants SET used = 1 WHERE grant_hash = :k AND kind = 'refresh' AND used = 0"
            " AND expires_at > :now RETURNING *",
            {"k": key, "now": now},
        )
        if row is not None:
            return row, False
        spent = await self.db.fetchone(
            "SELECT family FROM oauth_grants WHERE grant_hash = :k AND kind = 'refresh' AND used = 1", {"k": key}
        )
        if spent is None:
            return None, False
        await self.end_family(str(spent["family"]))
        return None, True

    async def end_family(self, family: str) -> None:
        """Every code, access and refresh token of one sign-in."""
        await self.db.execute("DELETE FROM oauth_grants WHERE family = :f", {"f": family})

    # -- bounds -----------------------------------------------------------------------------------------------------
    async def _keep_newest(self, table: str, key: str, user_id: str, keep: int) -> None:
        """End the user's own oldest rows of `table` so at most `keep` remain."""
        rows = await self.db.fetchall(
            f"SELECT {key} AS k FROM {table} WHERE user_id = :u ORDER BY created_at DESC", {"u": user_id}
        )
        for row in rows[max(keep, 0) :]:
            await self.db.execute(f"DELETE FROM {table} WHERE {key} = :k", {"k": row["k"]})

    async def _end_oldest_families(self, user_id: str, family: str, keep: int) -> None:
        """End the user's own oldest grant families (other than `family`) so at most `keep` others remain."""
        rows = await self.db.fetchall(
            "SELECT family, MIN(created_at) AS first FROM oauth_grants WHERE user_id = :u AND family <> :f"
            " GROUP BY family ORDER BY first DESC",
            {"u": user_id, "f": family},
        )
        for row in rows[max(keep, 0) :]:
            await self.end_family(str(row["family"]))
