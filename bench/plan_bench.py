"""Query plan benchmark: a listing page for a restricted user through the plan vs. fetch-then-check, the cost of
building a plan on a large policy, and an administrator's pages against the listings as they were before plans.

    python bench/plan_bench.py                     # 1,000,000 requests, 10,000 constraints (~3-4 min on 2 cores)
    python bench/plan_bench.py --rows 200000       # quicker

1. Plan building: a policy of 10,000 request constraints (200 roles, each constraint `templateId` or `userId`
   `equals` a literal, 85 % allow, 15 % deny) plus alice's role (`userId equals alice`, minus a deny on one
   template), and a role `everything` holding all 10,000 as allows. `plan_access` warm (the plan kept per
   subject and policy version), cold (the subjects' plans dropped: stated anew from the roles' grants, which
   a policy version states once) and first (a fresh policy: the grants stated too) — for alice and for a
   subject holding all 10,000 constraints.
2. Listing: a real store (SQLite file, the engine's schema and indexes) holding ROWS requests, 1 % created by
   alice, loaded with bulk inserts in one transaction. A page of 50, newest first, with its exact total:
   `Store.list_requests(limit=50, access=plan)` (what the request listings run) against fetch-then-check with
   the right total (every row read in batches of 20,000, parsed and decided, the first 50 allowed kept). The
   administrator's page with and without the plan (his renders as no condition: the SQL listings ran before).
3. Templates: 10,000 stored templates and 100 from a file, an administrator's page of 50 through
   `list_templates` (the store pages through the plan, the file's are merged in) against the listing as it
   was (every template of the engine's cache decided, then sliced).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backends.local.attributes import request_attrs, template_attrs
from backends.local.policy import CompiledPolicy
from backends.local.policy.plans import plan_access
from backends.local.store import open_store
from pluginsdk.models import Request
from pluginsdk.principal import SYSTEM_ADMIN, Principal


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


def plan_building(size: int, rows: list[tuple[str, str]]) -> None:
    compiled = policy(size)
    subjects = {
        "alice": Principal(user_id="alice", roles=("alice-role",)),
        f"holding all {size:,}": Principal(user_id="root", roles=("everything",)),
    }
    plan_access(policy(10), subjects["alice"], "request", "GET", 1)  # the process's first plan (imports, schemas)
    for name, who in subjects.items():
        fresh = policy(size)
        gc.collect()  # the policy's own garbage, not the plan's
        started = time.perf_counter()
        plan = plan_access(fresh, who, "request", "GET", 1)
        first = time.perf_counter() - started
        warm = timed(lambda who=who: plan_access(compiled, who, "request", "GET", 1), 2000)

        def cold(who: Principal = who) -> None:
            compiled.cache_clear()
            plan_access(compiled, who, "request", "GET", 1)

        leaves = _leaves(plan.condition)
        rows.append(
            (
                f"`plan_access`, {size:,} constraints, subject {name} ({leaves} leaves): warm / cold / first",
                f"{warm * 1e6:.1f} µs / {timed(cold, 200) * 1e3:.3f} ms / {first * 1e3:.1f} ms",
            )
        )


def _leaves(node: Any) -> int:
    return 0 if node is None else 1 if node.op == "match" else sum(_leaves(n) for n in node.operands)


def load(path: Path, rows: int) -> None:
    """ROWS requests in one transaction of bulk inserts (the engine's schema and indexes already in place)."""
    base = datetime(2026, 1, 1, tzinfo=UTC)
    proto = Request(request_id="REQ", template_id="TPL", created_by="USER").model_dump_json()
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
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


async def listing(rows: int, table: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        store = await open_store(str(path))
        started = time.perf_counter()
        load(path, rows)
        table.append(
            (f"loading {rows:,} requests (bulk inserts, one transaction)", f"{time.perf_counter() - started:.1f} s")
        )
        compiled = policy(100)
        alice = Principal(user_id="alice", roles=("alice-role",))
        plan = plan_access(compiled, alice, "request", "GET", 1)
        decide = compiled.decider(alice, "request", "GET")

        async def through_plan() -> tuple[list[Request], int]:
            return await store.list_requests(limit=50, access=plan)

        async def fetch_then_check() -> tuple[list[Request], int]:
            allowed: list[Request] = []
            total = offset = 0
            while True:
                batch, _ = await store.list_requests(limit=20_000, offset=offset)
                for r in batch:
                    if decide(request_attrs(r)):
                        total += 1
                        if len(allowed) < 50:
                            allowed.append(r)
                if len(batch) < 20_000:
                    return allowed, total
                offset += len(batch)

        fast = await through_plan()
        started = time.perf_counter()
        slow = await fetch_then_check()
        t_scan = time.perf_counter() - started
        assert [r.request_id for r in fast[0]] == [r.request_id for r in slow[0]] and fast[1] == slow[1]
        t_plan = await atimed(through_plan, 50)
        table.append(
            (
                f"a page of 50 requests for alice (1 % of {rows:,}; exact total {fast[1]:,}), through the plan",
                f"{t_plan * 1e3:.2f} ms",
            )
        )
        table.append(
            (
                "the same page and total by fetch-then-check (every row read, parsed and decided)",
                f"{t_scan:,.1f} s ({t_scan / t_plan:,.0f}x slower)",
            )
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
        table.append(
            (
                "the administrator's page of 50 requests, through his plan / the SQL listing without one",
                f"{t_admin * 1e3:.2f} ms / {t_bare * 1e3:.2f} ms ({t_admin / t_bare:.2f}x)",
            )
        )
        await store.aclose()


async def templates(table: list[tuple[str, str]], stored: int = 10_000, files: int = 100) -> None:
    """An administrator's page of templates through the listing against the listing as it was before plans."""
    from pluginsdk import PluginSDK
    from pluginsdk.models import Template
    from pluginsdk.operations import ListTemplatesQuery

    with tempfile.TemporaryDirectory() as tmp:
        tdir = Path(tmp) / "templates"
        tdir.mkdir()
        listed = [{"template_id": f"file-{i:04d}", "image_id": "ami-1", "provider_api": "local"} for i in range(files)]
        (tdir / "t.json").write_text(json.dumps({"templates": listed}))
        config = {"storage": {"path": str(Path(tmp) / "store.db")}, "templates": {"dir": str(tdir)}}
        async with PluginSDK(config=config) as sdk:
            await sdk.create_template(template_id="seed", image_id="ami-1", provider_api="local")
            proto = Template(template_id="TPL", image_id="ami-1", provider_api="local").model_dump_json()
            db = sqlite3.connect(Path(tmp) / "store.db")
            db.executemany(
                "INSERT INTO templates (template_id, provider_api, data, created_at, updated_at, active)"
                " VALUES (?, 'local', ?, '2026-01-01', '2026-01-01', 1)",
                [(f"tpl-{i:05d}", proto.replace("TPL", f"tpl-{i:05d}")) for i in range(stored)],
            )
            db.commit()
            db.close()
            engine: Any = sdk.backend.engine  # type: ignore[attr-defined]
            op = ListTemplatesQuery(limit=50, offset=5_000)

            async def now() -> Any:
                return await sdk.list_templates(limit=50, offset=5_000)

            cache: list[Any] = [None, []]

            async def before() -> Any:
                """The listing before plans: every template (stored ones parsed once per template version) merged
                with the files', decided one by one, then sliced."""
                if cache[0] is None:  # nothing writes templates during the run: parsed once, as a version cache did
                    rows = await engine.store.db.fetchall("SELECT data FROM templates ORDER BY template_id")
                    cache[:] = ["parsed", [Template.model_validate_json(r["data"]) for r in rows]]
                merged = {t.template_id: t for t in cache[1]}
                for t in engine.files.load().values():
                    merged.setdefault(t.template_id, t)
                found = sorted(merged.values(), key=lambda t: t.template_id)
                found = [t for t in found if t.configuration.get("active", True) is not False]
                shown = await engine.deps.access.visible(SYSTEM_ADMIN, "template", found, template_attrs)
                return shown[op.offset : op.offset + op.limit], len(shown)

            page = await now()
            old = await before()
            assert [t.template_id for t in page.templates] == [t.template_id for t in old[0]]
            assert page.total_count == old[1] == stored + files + 1
            t_now, t_before = await atimed(now, 30), await atimed(before, 30)
            table.append(
                (
                    f"the administrator's page of 50 templates ({stored:,} stored, {files} from a file): "
                    "the listing / as it was",
                    f"{t_now * 1e3:.2f} ms / {t_before * 1e3:.2f} ms ({t_now / t_before:.2f}x)",
                )
            )


async def atimed(fn: Any, reps: int) -> float:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--constraints", type=int, default=10_000)
    args = parser.parse_args()
    table: list[tuple[str, str]] = []
    plan_building(args.constraints, table)
    asyncio.run(listing(args.rows, table))
    asyncio.run(templates(table))
    print("| measure | result |\n|---|---|")
    for measure, result in table:
        print(f"| {measure} | {result} |")


if __name__ == "__main__":
    main()
