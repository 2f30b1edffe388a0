"""The `local` provider's simulated cloud: rows of `local_instances` (schema migration 2) and its call counters.

In the store, not in the provider's memory, so separate CLI processes see the same machines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .db import Database

__all__ = ["LocalInstances"]


def _in(ids: Sequence[str]) -> tuple[str, dict[str, Any]]:
    return "(" + ", ".join(f":i{n}" for n in range(len(ids))) + ")", {f"i{n}": i for n, i in enumerate(ids)}


class LocalInstances:
    """Reads and writes the simulated machines of every `local` instance (a row's `provider`: NULL for `local`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def live_ids(self, since: float) -> list[str]:
        """Machines not terminated before `since`."""
        rows = await self.db.fetchall(
            "SELECT instance_id FROM local_instances WHERE terminate_at IS NULL OR terminate_at > :t", {"t": since}
        )
        return [r["instance_id"] for r in rows]

    async def active_count(self, provider: str, now: float) -> int:
        """The instance's machines that hold capacity at `now` (launched fine, not terminated)."""
        row = await self.db.fetchone(
            "SELECT COUNT(*) AS n FROM local_instances"
            " WHERE fails = 0 AND (terminate_at IS NULL OR terminate_at > :now) AND COALESCE(provider, 'local') = :p",
            {"now": now, "p": provider},
        )
        return int(row["n"]) if row else 0

    async def of_request(self, request_id: str) -> list[Mapping[str, Any]]:
        """The request's machines, in launch order."""
        return await self.db.fetchall(
            "SELECT * FROM local_instances WHERE request_id = :r ORDER BY launched_at, instance_id", {"r": request_id}
        )

    async def insert(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """New machines (keys id, r, t, l, b, f, n, p); one already there is left as it is."""
        await self.db.executemany(
            "INSERT INTO local_instances"
            " (instance_id, request_id, instance_type, launched_at, boots_at, fails, host_name, provider)"
            " VALUES (:id, :r, :t, :l, :b, :f, :n, :p) ON CONFLICT (instance_id) DO NOTHING",
            rows,
        )

    async def claim_process(self, instance_id: str) -> bool:
        """True for the one caller that gets to start the machine's startup script."""
        return bool(
            await self.db.execute(
                "UPDATE local_instances SET process_id = 0 WHERE instance_id = :id AND process_id IS NULL",
                {"id": instance_id},
            )
        )

    async def set_process(self, instance_id: str, pid: int) -> None:
        await self.db.execute(
            "UPDATE local_instances SET process_id = :p WHERE instance_id = :id", {"p": pid, "id": instance_id}
        )

    async def process_ids(self, ids: Sequence[str]) -> list[int]:
        """The startup scripts' process ids of these machines."""
        clause, params = _in(ids)
        rows = await self.db.fetchall(
            "SELECT process_id FROM local_instances WHERE process_id > 0 AND instance_id IN " + clause, params
        )
        return [int(r["process_id"]) for r in rows]

    async def terminate(self, ids: Sequence[str], at: float) -> None:
        """Machines not terminating yet end at `at`."""
        await self.db.executemany(
            "UPDATE local_instances SET terminate_at = :t WHERE instance_id = :id AND terminate_at IS NULL",
            [{"t": at, "id": i} for i in ids],
        )

    async def count_call(self, key: str) -> str:
        """Count one call of a kind (a `meta` row); the count after it."""
        await self.db.execute(
            "INSERT INTO meta (key, value) VALUES (:k, '1')"
            " ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)",
            {"k": key},
        )
        row = await self.db.fetchone("SELECT value FROM meta WHERE key = :k", {"k": key})
        return str(row["value"]) if row else "0"

    async def running_since(self, before: float, provider: str) -> list[Mapping[str, Any]]:
        """The instance's machines that booted fine by `before` and are not terminating."""
        return await self.db.fetchall(
            "SELECT * FROM local_instances WHERE fails = 0 AND terminate_at IS NULL AND boots_at <= :t"
            " AND COALESCE(provider, 'local') = :p",
            {"t": before, "p": provider},
        )

    async def mark_failed(self, ids: Sequence[str], fails: int, at: float) -> None:
        """Machines still fine get the failure `fails` and end at `at`."""
        await self.db.executemany(
            "UPDATE local_instances SET fails = :f, terminate_at = :t WHERE instance_id = :id AND fails = 0",
            [{"f": fails, "t": at, "id": i} for i in ids],
        )

    async def failed_with(self, fails: int, provider: str) -> list[Mapping[str, Any]]:
        return await self.db.fetchall(
            "SELECT * FROM local_instances WHERE fails = :f AND COALESCE(provider, 'local') = :p",
            {"f": fails, "p": provider},
        )
