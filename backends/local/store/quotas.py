"""Quota reservations: what a recorded request holds of its template's and provider instances' quotas until
its machines are recorded (schema migration 16; the rules are `provisioning/quotas.py`).

A quota counts active machines plus reservations. A request's reservation is written in the transaction that
checks the quotas and records the request, so every process on the store counts it at once: on SQLite that
transaction is BEGIN IMMEDIATE (one writer at a time), on PostgreSQL it first locks one `quota_locks` row per
quota subject (`template:t`, `provider:p`, `user:u`, in sorted order, so two checks never deadlock). A
reservation is split over the provider instances the request may launch on (`shares`); the capacity fallback
moves it to the instance it launches on (`take`). It ends when the launch is settled (the machines recorded in
the same transaction, `settle`) or the request finishes (`release`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from pluginsdk.models.statuses import MachineStatus

from .db import Database

__all__ = ["QuotaLedger"]

_ACTIVE = ", ".join(f"'{s.value}'" for s in MachineStatus if s.active)


class QuotaLedger:
    """Reads and writes `quota_reservations` and `quota_locks`; every method but `release` runs inside the
    caller's transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def lock(self, subjects: Iterable[str]) -> None:
        """Hold the quota subjects until the transaction ends (PostgreSQL: a row lock each; SQLite's BEGIN
        IMMEDIATE already holds the whole store)."""
        if self.db.dialect != "postgresql":
            return
        await self.db.execute(  # one statement, the rows locked in sorted order
            "INSERT INTO quota_locks (subject) SELECT s FROM unnest(CAST(:s AS TEXT[])) AS t (s) ORDER BY s"
            " ON CONFLICT (subject) DO UPDATE SET subject = excluded.subject",
            {"s": sorted(set(subjects))},
        )

    async def held(
        self, template_id: str | None, providers: Iterable[str], *, besides: str | None = None
    ) -> tuple[int, dict[str, int]]:
        """Active plus reserved machines of the template (None: not counted) and of each provider instance, read
        by one statement (`besides`: not counting that request's reservation on the instances)."""
        names = list(dict.fromkeys(providers))
        params: dict[str, Any] = {f"p{i}": n for i, n in enumerate(names)}
        parts: list[str] = []
        if names:
            inlist = ", ".join(f":p{i}" for i in range(len(names)))
            params["r"] = besides or ""
            parts += [
                f"SELECT 'p' AS kind, provider_name AS k, COUNT(*) AS n FROM machines WHERE provider_name IN ({inlist})"
                f" AND status IN ({_ACTIVE}) GROUP BY provider_name",
                f"SELECT 'p' AS kind, provider AS k, SUM(machines) AS n FROM quota_reservations"
                f" WHERE provider IN ({inlist}) AND request_id <> :r GROUP BY provider",
            ]
        if template_id is not None:
            params["t"] = template_id
            parts += [
                f"SELECT 't' AS kind, template_id AS k, COUNT(*) AS n FROM machines WHERE template_id = :t"
                f" AND status IN ({_ACTIVE}) GROUP BY template_id",
                "SELECT 't' AS kind, template_id AS k, SUM(machines) AS n FROM quota_reservations"
                " WHERE template_id = :t GROUP BY template_id",
            ]
        template, held = 0, dict.fromkeys(names, 0)
        if parts:
            for r in await self.db.fetchall(" UNION ALL ".join(parts), params):
                if r["kind"] == "t":
                    template += int(r["n"])
                else:
                    held[r["k"]] += int(r["n"])
        return template, held

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
        await self.lock([f"provider:{provider}"])
        others = (await self.held(None, [provider], besides=request_id))[1][provider]
        taken = max(0, min(needed, limit - others))
        mine = await self.reserved(request_id)
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
