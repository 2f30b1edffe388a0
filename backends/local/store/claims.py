"""One actor per request: a lease row taken before a process calls the provider for a request.

Whoever reconciles, launches, tops up, returns or times out a request first claims it here; a second process
(or task) that finds a live claim leaves the request alone and reads what the holder writes. The claim is a
row, not a lock held by a connection, so it works alike on SQLite and PostgreSQL and across hosts, and no
transaction stays open across a provider call. A process that dies mid-claim never releases it: the lease
expires after `sdk.claim_seconds` and the next process takes over (the takeover is one atomic upsert).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .db import Database

__all__ = ["Claims", "process_tag"]


def process_tag() -> str:
    """host:pid of this process (the prefix of every claim it takes, for operators reading the table)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _dead_here(owner: str) -> bool:
    """Whether a claim's owner (`host:pid:nonce`) was a process of this host that has exited."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


class Claims:
    def __init__(self, db: Database, seconds: float) -> None:
        self.db = db
        self.seconds = seconds
        self.taken = 0
        self.skipped = 0
        """Counters of claims taken and of requests left to another actor (observability, tests)."""

    async def take(self, request_id: str) -> str | None:
        """A token when this caller now holds the request, None when another actor holds a live claim."""
        token = f"{process_tag()}:{uuid.uuid4().hex[:12]}"
        now = time.time()
        # insert, or take over an expired claim; one statement, so two takers cannot both win
        row = await self.db.fetchone(
            "INSERT INTO request_claims (request_id, owner, expires_at) VALUES (:id, :owner, :exp)"
            " ON CONFLICT (request_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at"
            " WHERE request_claims.expires_at < :now RETURNING owner",
            {"id": request_id, "owner": token, "exp": now + self.seconds, "now": now},
        )
        if (row is None or row["owner"] != token) and not await self._take_from_the_dead(request_id, token, now):
            self.skipped += 1
            return None
        self.taken += 1
        return token

    async def _take_from_the_dead(self, request_id: str, token: str, now: float) -> bool:
        """Take over a live claim whose holder was a process on this host that no longer exists.

        A killed process's lease would otherwise block its request until it expires; on its own host that
        death is visible at once. Other hosts' claims are left to expire.
        """
        row = await self.db.fetchone("SELECT owner FROM request_claims WHERE request_id = :id", {"id": request_id})
        if row is None or not _dead_here(str(row["owner"])):
            return False
        taken = await self.db.fetchone(
            "UPDATE request_claims SET owner = :owner, expires_at = :exp WHERE request_id = :id AND owner = :old"
            " RETURNING owner",
            {"id": request_id, "owner": token, "exp": now + self.seconds, "old": row["owner"]},
        )
        return taken is not None

    async def release(self, request_id: str, token: str) -> None:
        await self.db.execute(
            "DELETE FROM request_claims WHERE request_id = :id AND owner = :owner", {"id": request_id, "owner": token}
        )

    @asynccontextmanager
    async def hold(self, request_id: str) -> AsyncIterator[bool]:
        """`async with claims.hold(id) as mine:` — act on the request only when `mine`."""
        token = await self.take(request_id)
        try:
            yield token is not None
        finally:
            if token is not None:
                await self.release(request_id, token)

    async def live(self) -> list[dict[str, object]]:
        """Claims not yet expired (operators, tests)."""
        rows = await self.db.fetchall(
            "SELECT request_id, owner, expires_at FROM request_claims WHERE expires_at >= :now ORDER BY request_id",
            {"now": time.time()},
        )
        return [dict(r) for r in rows]
