"""Quota reservations and kept counts: what a recorded request holds of its template's and provider instances'
quotas until its machines are recorded (schema migrations 16 and 17; the rules are `provisioning/quotas.py`).

A quota counts active machines plus reservations, kept per subject (`template:t`, `provider:p`) in
`quota_held`: the store's triggers move a count in the transaction of every write to `machines` or
`quota_reservations` that changes it (PostgreSQL: noted per row, applied at commit by one statement locking
the counts in sorted order), so a check reads a few rows whatever the number of active machines. A
request's reservation is written in the transaction that checks the quotas and records the request, so every
process on the store counts it at once: on SQLite that transaction is BEGIN IMMEDIATE (one writer at a time),
on PostgreSQL the statement that reads the counts locks their rows (sorted, as the triggers write them, so two
checks never deadlock), and a `user:u` subject, which has no kept count, locks a `quota_locks` row. A
reservation is split over the provider instances the request may launch on (`shares`); the capacity fallback
moves it to the instance it launches on (`take`). It ends when the launch is settled (the machines recorded in
the same transaction, `settle`) or the request finishes (`release`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from .db import Database

__all__ = ["QuotaLedger"]


class QuotaLedger:
    """Reads and writes `quota_reservations` and `quota_locks`; every method but `release` runs inside the
    caller's transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def lock(self, subjects: Iterable[str]) -> None:
        """Hold quota subjects that have no kept count (`user:u`) until the transaction ends (PostgreSQL: a row
        lock each; SQLite's BEGIN IMMEDIATE already holds the whole store)."""
        names = sorted(set(subjects))
        if self.db.dialect != "postgresql" or not names:
            return
        await self.db.execute(  # one statement, the rows locked in sorted order
            "INSERT INTO quota_locks (subject) SELECT s FROM unnest(CAST(:s AS TEXT[])) AS t (s) ORDER BY s"
            " ON CONFLICT (subject) DO UPDATE SET subject = excluded.subject",
            {"s": names},
        )

    async def held(
        self, template_id: str | None, providers: Iterable[str], *, lock: bool = False
    ) -> tuple[int, dict[str, int]]:
        """Active plus reserved machines of the template (None: not counted) and of each provider instance: their
        kept counts (`quota_held`), one statement. `lock`: held until the transaction ends, so nothing else
        changes them meanwhile (PostgreSQL: the rows locked in sorted order by the statement that reads them, so
        it reads what the transaction it waited for committed)."""
        names = list(dict.fromkeys(providers))
        subjects = [f"provider:{n}" for n in names] + ([f"template:{template_id}"] if template_id is not None else [])
        if not subjects:
            return 0, {}
        if lock and self.db.dialect == "postgresql":
            rows = await self.db.fetchall(
                "INSERT INTO quota_held (subject, held) SELECT s, 0 FROM unnest(CAST(:s AS TEXT[])) AS t (s)"
                " ORDER BY s ON CONFLICT (subject) DO UPDATE SET held = quota_held.held RETURNING subject, held",
                {"s": sorted(subjects)},
            )
            counts = {r["subject"]: int(r["held"]) for r in rows}
        else:
            counts = await self._counts(subjects)
        return counts.get(f"template:{template_id}", 0), {n: counts.get(f"provider:{n}", 0) for n in names}

    async def record_within(
        self,
        insert_request: str,
        request: Mapping[str, Any],
        template_id: str,
        shares: Mapping[str, int],
        limits: Mapping[str, tuple[int, int]],
    ) -> tuple[bool, dict[str, int]]:
        """Record the request (`insert_request`: its INSERT ... SELECT with `request`'s parameters) and reserve
        `shares` only if each subject in `limits` (its limit, what the request adds) has room; whether it did,
        and the counts read (those of a refusal on SQLite). PostgreSQL: one autocommit statement that locks and
        reads the kept counts, as `held(lock=True)` does. SQLite: the request's INSERT carries the check, inside
        BEGIN IMMEDIATE."""
        subjects = sorted(limits)
        if self.db.dialect != "postgresql":
            room = " AND ".join(
                f"COALESCE((SELECT held FROM quota_held WHERE subject = :qs{i}), 0) + :qa{i} <= :ql{i}"
                for i in range(len(subjects))
            )
            params = dict(request)
            for i, subject in enumerate(subjects):
                params |= {f"qs{i}": subject, f"ql{i}": limits[subject][0], f"qa{i}": limits[subject][1]}
            async with self.db.transaction():
                if await self.db.execute(f"{insert_request} WHERE {room or '1'}", params):
                    await self.record(request["id"], template_id, shares)
                    return True, {}
                return False, await self._counts(subjects)
        rows = await self.db.fetchall(
            "WITH held AS (INSERT INTO quota_held (subject, held)"
            " SELECT s, 0 FROM unnest(CAST(:qs AS TEXT[])) AS t (s) ORDER BY s"
            " ON CONFLICT (subject) DO UPDATE SET held = quota_held.held RETURNING subject, held),"
            " room AS (SELECT COALESCE(bool_and(h.held + q.asked <= q.lim), TRUE) AS ok FROM held AS h"
            " JOIN unnest(CAST(:qs AS TEXT[]), CAST(:ql AS BIGINT[]), CAST(:qa AS BIGINT[])) AS q (s, lim, asked)"
            " ON q.s = h.subject),"
            f" recorded AS ({insert_request} FROM room WHERE room.ok RETURNING request_id),"
            " reserved AS (INSERT INTO quota_reservations (request_id, provider, template_id, machines, created_at)"
            " SELECT r.request_id, p, CAST(:qt AS TEXT), n, CAST(:qc AS DOUBLE PRECISION) FROM recorded AS r,"
            " unnest(CAST(:qp AS TEXT[]), CAST(:qn AS INT[])) AS q (p, n) WHERE n > 0)"
            " SELECT h.subject, h.held, room.ok FROM held AS h, room",
            {
                **request,
                "qs": subjects,
                "ql": [limits[s][0] for s in subjects],
                "qa": [limits[s][1] for s in subjects],
                "qp": list(shares),
                "qn": list(shares.values()),
                "qt": template_id,
                "qc": time.time(),
            },
        )
        return bool(rows[0]["ok"]) if rows else True, {r["subject"]: int(r["held"]) for r in rows}

    async def _counts(self, subjects: list[str]) -> dict[str, int]:
        inlist = ", ".join(f":s{i}" for i in range(len(subjects)))
        rows = await self.db.fetchall(
            f"SELECT subject, held FROM quota_held WHERE subject IN ({inlist})",
            {f"s{i}": s for i, s in enumerate(subjects)},
        )
        return {r["subject"]: int(r["held"]) for r in rows}

    async def record(self, request_id: str, template_id: str, shares: Mapping[str, int]) -> None:
        """Reserve `shares` (machines per provider instance) for a request being recorded."""
        now = time.time()
        rows = [{"r": request_id, "p": p, "t": template_id, "n": n, "c": now} for p, n in shares.items() if n > 0]
        if len(rows) == 1:  # the usual case: one statement, no batch
            await self.db.execute(
                "INSERT INTO quota_reservations (request_id, provider, template_id, machines, created_at)"
                " VALUES (:r, :p, :t, :n, :c)",
                rows[0],
            )
        elif rows:
            await self.db.executemany(
                "INSERT INTO quota_reservations (request_id, provider, template_id, machines, created_at)"
                " VALUES (:r, :p, :t, :n, :c)",
                rows,
            )

    async def reserved(self, request_id: str) -> dict[str, int]:
        """What the request reserves, machines per provider instance."""
        rows = await self.db.fetchall(
            "SELECT provider, machines FROM quota_reservations WHERE request_id = :r ORDER BY provider",
            {"r": request_id},
        )
        return {r["provider"]: int(r["machines"]) for r in rows}

    async def take(self, request_id: str, template_id: str, provider: str, limit: int, needed: int) -> int:
        """How many of `needed` machines the request may launch on `provider` now (its quota `limit` less what
        others hold), moved into the request's reservation there from its other instances."""
        everyone = (await self.held(None, [provider], lock=True))[1][provider]
        mine = await self.reserved(request_id)
        taken = max(0, min(needed, limit - (everyone - mine.get(provider, 0))))
        grow = taken - mine.get(provider, 0)
        if grow <= 0:
            return taken
        shares = dict(mine)
        shares[provider] = taken
        for other in mine:  # the request's total stays what it reserved
            if other != provider and grow > 0:
                cut = min(grow, shares[other])
                shares[other] -= cut
                grow -= cut
        await self._replace(request_id, template_id, shares)
        return taken

    async def settle(self, request_id: str, template_id: str, provider: str, outstanding: int) -> None:
        """Machines of the request are recorded: its reservation shrinks to the `outstanding` machines the
        provider has not reported yet (held on `provider`); a request that reserved nothing still reserves
        nothing."""
        if outstanding <= 0:
            await self.release(request_id)
            return
        row = await self.db.fetchone(
            "SELECT COALESCE(SUM(machines), 0) AS n FROM quota_reservations WHERE request_id = :r", {"r": request_id}
        )
        if row is not None and int(row["n"]) > outstanding:
            await self._replace(request_id, template_id, {provider: outstanding})

    async def release(self, request_id: str) -> None:
        """The request finished: it reserves nothing."""
        await self.db.execute("DELETE FROM quota_reservations WHERE request_id = :r", {"r": request_id})

    async def _replace(self, request_id: str, template_id: str, shares: Mapping[str, int]) -> None:
        await self.release(request_id)
        await self.record(request_id, template_id, shares)
