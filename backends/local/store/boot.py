"""Bootstrap memory: which machines said they are ready, and each template's bootstrap failures.

A template that requires a readiness signal (docs/providers.md) counts its bootstrap failures in a row;
at its limit it is protected (no new launches) until an operator clears it. Rows, not process memory, so
every server on one database agrees and a restart forgets nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from pluginsdk.words import counted

from .db import Database

__all__ = ["BootMemory"]


class BootMemory:
    """Reads and writes `machine_ready` and `template_boot` (schema migration 14)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.clock: Callable[[], float] = time.time

    async def mark_ready(self, machine_id: str) -> bool:
        """Record the machine's readiness; False when it was recorded already."""
        return bool(
            await self.db.execute(
                "INSERT INTO machine_ready (machine_id, ready_at) VALUES (:m, :t) ON CONFLICT (machine_id) DO NOTHING",
                {"m": machine_id, "t": self.clock()},
            )
        )

    async def ready(self, machine_ids: Iterable[str]) -> set[str]:
        """Those of the machines that reported ready."""
        ids = list(machine_ids)
        if not ids:
            return set()
        rows = await self.db.fetchall(
            "SELECT machine_id FROM machine_ready WHERE machine_id IN ("
            + ", ".join(f":m{n}" for n in range(len(ids)))
            + ")",
            {f"m{n}": i for n, i in enumerate(ids)},
        )
        return {r["machine_id"] for r in rows}

    async def failed(self, template_id: str, limit: int, reason: str) -> str | None:
        """Count one bootstrap failure of the template; its protection reason once `limit` are in a row."""
        now = self.clock()
        async with self.db.transaction():
            lock = " FOR UPDATE" if self.db.dialect == "postgresql" else ""
            row = await self.db.fetchone(
                "SELECT failures, protected_reason FROM template_boot WHERE template_id = :t" + lock,
                {"t": template_id},
            )
            failures = (int(row["failures"]) if row else 0) + 1
            protected = row["protected_reason"] if row else None
            if protected is None and failures >= limit:
                protected = (
                    f"Template '{template_id}' is protected after {counted(failures, 'bootstrap failure')} in a row"
                    f" (last: {reason[:300]})"
                )
            await self.db.execute(
                "INSERT INTO template_boot (template_id, failures, protected_reason, updated_at)"
                " VALUES (:t, :f, :p, :u) ON CONFLICT (template_id) DO UPDATE SET failures = :f,"
                " protected_reason = :p, updated_at = :u",
                {"t": template_id, "f": failures, "p": protected, "u": now},
            )
        return protected

    async def succeeded(self, template_id: str) -> None:
        """A machine of the template came up ready: its failures in a row start again (a protection stays)."""
        await self.db.execute(
            "UPDATE template_boot SET failures = 0, updated_at = :u WHERE template_id = :t"
            " AND failures > 0 AND protected_reason IS NULL",
            {"t": template_id, "u": self.clock()},
        )

    async def protection(self, template_id: str) -> str | None:
        """Why the template is protected, or None."""
        row = await self.db.fetchone(
            "SELECT protected_reason FROM template_boot WHERE template_id = :t", {"t": template_id}
        )
        return row["protected_reason"] if row else None

    async def protected(self) -> dict[str, str]:
        """Every protected template and why."""
        rows = await self.db.fetchall(
            "SELECT template_id, protected_reason FROM template_boot WHERE protected_reason IS NOT NULL"
            " ORDER BY template_id"
        )
        return {r["template_id"]: r["protected_reason"] for r in rows}

    async def clear(self, template_ids: Iterable[str]) -> None:
        """An operator cleared the templates: no protection, no failures counted."""
        for template_id in template_ids:
            await self.db.execute("DELETE FROM template_boot WHERE template_id = :t", {"t": template_id})
