"""Query plan benchmark: a listing page for a restricted user through the plan vs. fetch-then-check, and the
cost of building a plan on a large policy.

    python bench/plan_bench.py                  # 200,000 requests, 10,000 constraints
    python bench/plan_bench.py --rows 1000000   # the issue's size (a minute or two to load on the 2-core VM)

1. Plan building: a policy of 10,000 request constraints (200 roles, each constraint `templateId` or `userId`
   `equals` a literal, 85 % allow, 15 % deny) plus alice's role (`userId equals alice`, minus a deny on one
   template). `plan_access` for alice, warm (the plan kept with the subject's rules, as on every call but the
   first of a policy version) and cold (cache cleared each time); and, cold, for a subject holding all 10,000.
2. Listing: a real store (SQLite file, the engine's schema and indexes) holding ROWS requests, 1 % created by
   alice. A page of 50, newest first, with its exact total: `Store.list_requests(limit=50, access=plan)` (what
   the request listings run) against fetch-then-check with the right total (every row read and checked, the
   first 50 allowed kept). The administrator's page with and without the plan (his renders as no condition).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backends.local.handlers.request_records import request_attrs
from backends.local.policy import CompiledPolicy
from backends.local.policy.plans import plan_access
from backends.local.store import open_store
from pluginsdk.models import Request
from pluginsdk.principal import Principal


def _constraint(i: int, role: str, field: str, value: str, kind: str) -> dict[str, Any]:
    return {
        "constraintId": f"c{i}",
        "objectType": "request",
        "criteriaAnd": [{"field": field, "operator": "equals", "value": value}],
        "groupPermissions": [{"groupId": role, "permission": "GET", "permissionType": kind}],
    }


def policy(size: int) -> CompiledPolicy:
    constraints = [
        _constraint(
            i, f"r{i % 200}", "templateId" if i % 2 else "userId", f"v-{i}", "deny" if i % 100 < 15 else "allow"
        )
        for i in range(size)
    ]
    constraints += [
        _constraint(size, "alice-role", "userId", "alice", "allow"),
        _constraint(size + 1, "alice-role", "templateId", "tpl-secret", "deny"),
        *(
            {**c, "groupPermissions": [{"groupId": "everything", "permission": "GET", "permissionType": "allow"}]}
            for c in constraints
        ),
    ]
    return CompiledPolicy(constraints)


def timed(fn: Any, reps: int) -> float:
    """Median seconds of one call."""
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def plan_building(size: int) -> None:
    compiled = policy(size)
    alice = Principal(user_id="alice", roles=("alice-role",))
    everything = Principal(user_id="root", roles=("everything",))
    warm = timed(lambda: plan_access(compiled, alice, "request", "GET", 1), 2000)

    def cold() -> None:
        compiled.cache_clear()
        plan_access(compiled, alice, "request", "GET", 1)

    print(f"plan building, {size:,} constraints: alice warm {warm * 1e6:.1f} µs, cold {timed(cold, 500) * 1e6:.1f} µs")

    def big() -> None:
        compiled.cache_clear()
        plan_access(compiled, everything, "request", "GET", 1)

    print(f"  a subject holding all {size:,} constraints (a {size:,}-leaf tree), cold: {timed(big, 10) * 1e3:.1f} ms")


def load(path: Path, rows: int) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    proto = Request(request_id="REQ", template_id="TPL", created_by="USER").model_dump_json()
    db = sqlite3.connect(path)
    batch = []
    for i in range(rows):
        user = "alice" if i % 100 == 7 else f"user-{i % 997}"
        template = "tpl-secret" if i % 1000 == 7 else f"tpl-{i % 13}"
        rid = f"req-{i:08d}"
        created = (base + timedelta(seconds=i)).isoformat()
        data = proto.replace("REQ", rid).replace("TPL", template).replace("USER", user)
        batch.append((rid, "provision", "complete", template, "local", user, created, created, None, data))
        if len(batch) == 50_000:
            db.executemany("INSERT INTO requests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
            batch.clear()
    db.executemany("INSERT INTO requests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
    db.commit()
    db.execute("ANALYZE")
    db.close()


async def listing(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        store = await open_store(str(path))
        started = time.perf_counter()
        load(path, rows)
        print(f"\nlisting: {rows:,} requests loaded in {time.perf_counter() - started:.1f} s, 1 % alice's")
        compiled = policy(100)
        alice = Principal(user_id="alice", roles=("alice-role",))
        plan = plan_access(compiled, alice, "request", "GET", 1)
        decide = compiled.decider(alice, "request", "GET")

        async def through_plan() -> tuple[list[Request], int]:
            return await store.list_requests(limit=50, access=plan)

        async def fetch_then_check() -> tuple[list[Request], int]:
            items, _ = await store.list_requests()
            allowed = [r for r in items if decide(request_attrs(r))]
            return allowed[:50], len(allowed)

        fast = await through_plan()
        slow = await fetch_then_check()
        assert [r.request_id for r in fast[0]] == [r.request_id for r in slow[0]] and fast[1] == slow[1]
        t_plan = await atimed(through_plan, 50)
        t_scan = await atimed(fetch_then_check, 2)
        print(
            f"  alice, page of 50 (total {fast[1]:,}): through the plan {t_plan * 1e3:.2f} ms,"
            f" fetch-then-check {t_scan * 1e3:,.0f} ms ({t_scan / t_plan:,.0f}x)"
        )
        admin = plan_access(
            CompiledPolicy([{**_constraint(0, "admin", "requestId", "*", "allow")}]),
            Principal(user_id="root", roles=("admin",)),
            "request",
            "GET",
            1,
        )
        t_admin = await atimed(lambda: store.list_requests(limit=50, access=admin), 50)
        t_bare = await atimed(lambda: store.list_requests(limit=50), 50)
        print(f"  administrator, page of 50: with the plan {t_admin * 1e3:.2f} ms, without {t_bare * 1e3:.2f} ms")
        await store.aclose()


async def atimed(fn: Any, reps: int) -> float:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--constraints", type=int, default=10_000)
    args = parser.parse_args()
    plan_building(args.constraints)
    asyncio.run(listing(args.rows))


if __name__ == "__main__":
    main()
