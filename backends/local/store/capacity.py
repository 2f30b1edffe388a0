"""The capacity memory: launch candidates that failed for capacity, shared by every process on the store.

One row per candidate key (`Offering.key`: provider, instance type, subnets, price type). A capacity failure
opens its circuit for a cooldown that doubles on each failure in a row (`provider.capacity`: 300 s up to
1,800 s by default); once the cooldown ends the candidate is half-open: one launch (the probe, held for
`probe_seconds`) may go, and its success closes the circuit, its failure opens it for the next, longer
cooldown. Rows, not process memory, so two servers on one PostgreSQL database agree and a restart forgets
nothing; the probe is taken by one conditional UPDATE, so two processes cannot both probe.

Its two records are NamedTuples, not dataclasses: a dataclass compiles its methods when the module is imported
(~4 M instructions each), and every launch imports this module. No postponed annotations: NamedTuple
would compile each string annotation as a ForwardRef.
"""

import time
from collections.abc import Callable
from typing import Literal, NamedTuple

from .db import Database, Row

__all__ = ["Admission", "CapacityMemory", "OfferingState"]

State = Literal["closed", "cooling", "half-open", "probing"]


class OfferingState(NamedTuple):
    """One candidate as the memory holds it."""

    key: str
    provider: str
    state: State
    failures: int
    cooldown_until: float | None
    last_reason: str | None
    updated_at: float


class Admission(NamedTuple):
    """Whether a launch may go to a candidate now: `launch` (closed), `probe` (half-open, this caller holds
    the probe), or `skip` with the time it may be tried again (`until`)."""

    verdict: Literal["launch", "probe", "skip"]
    state: State
    until: float | None = None
    reason: str | None = None


def _state(row: Row, now: float) -> State:
    if not row["failures"]:
        return "closed"
    if row["cooldown_until"] is not None and now < row["cooldown_until"]:
        return "cooling"
    if row["probe_until"] is not None and now < row["probe_until"]:
        return "probing"
    return "half-open"


class CapacityMemory:
    """Reads and writes `capacity_offerings` (schema migration 13)."""

    def __init__(self, db: Database, *, cooldown: float, max_cooldown: float, probe: float) -> None:
        self.db = db
        self.cooldown = cooldown
        self.max_cooldown = max_cooldown
        self.probe = probe
        self.clock: Callable[[], float] = time.time

    async def admit(self, key: str) -> Admission:
        """May a launch go to `key` now? Taking a half-open candidate's probe is atomic (one caller wins)."""
        now = self.clock()
        row = await self.db.fetchone("SELECT * FROM capacity_offerings WHERE offering_key = :k", {"k": key})
        if row is None or not row["failures"]:
            return Admission("launch", "closed")
        state = _state(row, now)
        if state == "cooling":
            return Admission("skip", state, row["cooldown_until"], row["last_reason"])
        if state == "half-open":
            taken = await self.db.execute(
                "UPDATE capacity_offerings SET probe_until = :until WHERE offering_key = :k AND failures > 0"
                " AND (cooldown_until IS NULL OR cooldown_until <= :now)"
                " AND (probe_until IS NULL OR probe_until <= :now)",
                {"k": key, "now": now, "until": now + self.probe},
            )
            if taken:
                return Admission("probe", "half-open", None, row["last_reason"])
        until = row["probe_until"] if row["probe_until"] is not None else now + self.probe
        return Admission("skip", "probing", max(until, now), row["last_reason"])

    async def failed(self, key: str, provider: str, reason: str) -> float:
        """Record a capacity failure of `key`; the time its (longer) cooldown ends."""
        now = self.clock()
        async with self.db.transaction():
            lock = " FOR UPDATE" if self.db.dialect == "postgresql" else ""
            row = await self.db.fetchone(
                "SELECT failures FROM capacity_offerings WHERE offering_key = :k" + lock, {"k": key}
            )
            failures = (int(row["failures"]) if row else 0) + 1
            until = now + min(self.cooldown * 2.0 ** (failures - 1), self.max_cooldown)
            params = {"k": key, "p": provider, "f": failures, "u": until, "r": reason[:500], "t": now}
            if row is None:
                await self.db.execute(
                    "INSERT INTO capacity_offerings"
                    " (offering_key, provider, failures, cooldown_until, probe_until, last_reason, updated_at)"
                    " VALUES (:k, :p, :f, :u, NULL, :r, :t)"
                    " ON CONFLICT (offering_key) DO UPDATE SET failures = :f, cooldown_until = :u,"
                    " probe_until = NULL, last_reason = :r, updated_at = :t",
                    params,
                )
            else:
                await self.db.execute(
                    "UPDATE capacity_offerings SET failures = :f, cooldown_until = :u, probe_until = NULL,"
                    " last_reason = :r, updated_at = :t WHERE offering_key = :k",
                    params,
                )
        return until

    async def succeeded(self, key: str) -> None:
        """A launch on `key` worked: its circuit closes (a row is kept only while it remembers a failure)."""
        await self.db.execute(
            "UPDATE capacity_offerings SET failures = 0, cooldown_until = NULL, probe_until = NULL, updated_at = :t"
            " WHERE offering_key = :k AND failures > 0",
            {"k": key, "t": self.clock()},
        )

    async def states(self) -> list[OfferingState]:
        """Every candidate the memory holds, by key."""
        now = self.clock()
        rows = await self.db.fetchall("SELECT * FROM capacity_offerings ORDER BY offering_key")
        return [
            OfferingState(
                key=r["offering_key"],
                provider=r["provider"],
                state=_state(r, now),
                failures=int(r["failures"]),
                cooldown_until=r["cooldown_until"],
                last_reason=r["last_reason"],
                updated_at=float(r["updated_at"]),
            )
            for r in rows
        ]
