"""SDK in-process benchmark (issue 2): start-up, RSS, list_templates and get_request latency.

    python bench/sdk_bench.py [--quick]

Measures our `PluginSDK` and, in the same run, the peer orb-py (`bench/peer_orb.py`, run in its own venv
`bench/.peer/venv` so the two never share imports). Prints one table with ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_STARTUP = """
import time, json
t0 = time.perf_counter()
import asyncio
from pluginsdk import PluginSDK
async def main():
    async with PluginSDK(config={"storage": {"path": %r}}) as sdk:
        t1 = time.perf_counter()
        rss = int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]) / 1024
        print(json.dumps({"startup_s": t1 - t0, "rss_mb": rss}))
asyncio.run(main())
"""


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def startup(samples: int, store: str) -> dict[str, float]:
    """Fresh interpreter per sample: import + `async with PluginSDK()` (store opened, schema checked)."""
    runs = []
    for _ in range(samples):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _STARTUP % store], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t
        runs.append({**json.loads(out.stdout), "wall_s": wall})
    return {
        "startup_s": statistics.median(r["startup_s"] for r in runs),
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "rss_mb": statistics.median(r["rss_mb"] for r in runs),
    }


def seed(store: str, templates: int, requests: int) -> list[str]:
    """Fill a store fast: templates through the SDK, requests as rows written in one transaction."""
    from backends.local.store.db import open_database
    from backends.local.store.schema import migrate
    from pluginsdk.models import Machine, MachineStatus, Request, RequestStatus, Template, utcnow

    async def run() -> list[str]:
        db = open_database(store)
        await migrate(db)
        now = utcnow().isoformat()
        trows = [
            {"id": f"tpl-{i:05d}", "api": "aws", "data": Template(template_id=f"tpl-{i:05d}", image_id="ami-1",
             instance_type="t3.small", tags={"n": str(i)}).model_dump_json(), "c": now, "u": now}
            for i in range(templates)
        ]  # fmt: skip
        await db.executemany(
            "INSERT INTO templates (template_id, provider_api, data, created_at, updated_at)"
            " VALUES (:id, :api, :data, :c, :u)",
            trows,
        )
        ids = [f"req-{uuid.UUID(int=i + 1)}" for i in range(requests)]
        rrows, mrows = [], []
        for i, rid in enumerate(ids):
            mids = [f"i-{i:08d}{k}" for k in range(2)]
            r = Request(request_id=rid, status=RequestStatus.COMPLETED, template_id=f"tpl-{i % max(templates, 1):05d}",
                        count=2, machine_ids=mids, completed_at=utcnow(), message="2 of 2 machines running.")  # fmt: skip
            rrows.append({"id": rid, "type": "provision", "status": "completed", "tpl": r.template_id, "prov": "local",
                          "by": "administrator", "c": now, "u": now, "done": now, "data": r.model_dump_json()})  # fmt: skip
            for mid in mids:
                m = Machine(machine_id=mid, request_id=rid, template_id=r.template_id or "", status=MachineStatus.RUNNING,
                            ip_address="10.0.0.1", name="ip-10-0-0-1.local")  # fmt: skip
                mrows.append({"id": mid, "req": rid, "tpl": m.template_id, "status": "running", "name": m.name,
                              "prov": "local", "c": now, "u": now, "data": m.model_dump_json()})  # fmt: skip
        async with db.transaction():
            await db.executemany(
                "INSERT INTO requests (request_id, request_type, status, template_id, provider_name, created_by,"
                " created_at, updated_at, completed_at, data)"
                " VALUES (:id, :type, :status, :tpl, :prov, :by, :c, :u, :done, :data)",
                rrows,
            )
            await db.executemany(
                "INSERT INTO machines (machine_id, request_id, template_id, status, name, provider_name,"
                " created_at, updated_at, data) VALUES (:id, :req, :tpl, :status, :name, :prov, :c, :u, :data)",
                mrows,
            )
        await db.aclose()
        return ids

    return asyncio.run(run())


async def latency(store: str, ids: list[str], n: int) -> dict[str, dict[str, float]]:
    from pluginsdk import PluginSDK

    out: dict[str, dict[str, float]] = {}
    async with PluginSDK(config={"storage": {"path": store}}) as sdk:

        async def timeit(name: str, call: Any, count: int) -> None:
            for _ in range(min(50, count)):
                await call(0)
            samples = []
            for i in range(count):
                t = time.perf_counter()
                await call(i)
                samples.append(time.perf_counter() - t)
            out[name] = {"p50_us": pct(samples, 0.5) * 1e6, "p99_us": pct(samples, 0.99) * 1e6}

        step = max(1, len(ids) // n)
        await timeit("get_request", lambda i: sdk.get_request(ids[(i * step) % len(ids)]), n)
        await timeit("get_request long", lambda i: sdk.get_request(ids[(i * step) % len(ids)], long=True), n)
        await timeit("list_templates (50)", lambda i: sdk.list_templates(), max(50, n // 20))
        await timeit("list_templates (1000)", lambda i: sdk.list_templates(limit=1000), max(20, n // 100))
    return out


def peer(args: argparse.Namespace, workdir: Path) -> dict[str, Any] | None:
    python = ROOT / "bench" / ".peer" / "venv" / "bin" / "python"
    if not python.exists():
        print("peer venv missing: run `bash bench/peer_setup.sh` to compare with orb-py", file=sys.stderr)
        return None
    cmd = [str(python), str(ROOT / "bench" / "peer_orb.py"), "--workdir", str(workdir),
           "--templates", str(args.templates), "--requests", str(args.requests), "--samples", str(args.samples),
           "--n", str(args.n)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print(f"peer failed: {res.stderr[-2000:]}", file=sys.stderr)
        return None
    data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small run (10k requests, fewer samples)")
    ap.add_argument("--no-peer", action="store_true")
    args = ap.parse_args()
    args.templates, args.requests = 1000, 10_000 if args.quick else 100_000
    args.samples, args.n = (5, 1000) if args.quick else (10, 5000)
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "bench.db")
        t = time.perf_counter()
        ids = seed(store, args.templates, args.requests)
        print(
            f"seeded {args.templates} templates, {len(ids)} requests in {time.perf_counter() - t:.1f}s", file=sys.stderr
        )
        ours = {"startup": startup(args.samples, store), **asyncio.run(latency(store, ids, args.n))}
        theirs = None if args.no_peer else peer(args, Path(tmp) / "peer")
    rows = [
        ("async with start-up (ms)", ours["startup"]["startup_s"] * 1e3, "startup_ms"),
        ("process wall incl. interpreter (ms)", ours["startup"]["wall_s"] * 1e3, "wall_ms"),
        ("RSS after start-up (MB)", ours["startup"]["rss_mb"], "rss_mb"),
    ]
    for name in ("get_request", "get_request long", "list_templates (50)", "list_templates (1000)"):
        rows.append((f"{name} p50 (µs)", ours[name]["p50_us"], f"{name} p50_us"))
        rows.append((f"{name} p99 (µs)", ours[name]["p99_us"], f"{name} p99_us"))
    print(f"\n{args.templates} templates, {args.requests} requests; python {sys.version.split()[0]}\n")
    print("| metric | pluginsdk | orb-py | orb-py / pluginsdk |\n|---|---:|---:|---:|")
    for label, value, key in rows:
        peer_value = (theirs or {}).get(key)
        ratio = f"{peer_value / value:.1f}×" if isinstance(peer_value, int | float) and value else "—"
        shown = f"{peer_value:,.1f}" if isinstance(peer_value, int | float) else "n/a"
        print(f"| {label} | {value:,.1f} | {shown} | {ratio} |")
    if theirs and theirs.get("notes"):
        print("\npeer notes: " + "; ".join(theirs["notes"]))


if __name__ == "__main__":
    main()
