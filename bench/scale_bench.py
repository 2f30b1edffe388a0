"""Scale-out benchmark (issue 16): authenticated reads and a read/write mix, 1 and 2 workers, SQLite and
PostgreSQL, in one run; and the per-decision cost of the policy-version check before and after LISTEN/NOTIFY.

    python bench/scale_bench.py [--seconds 5] [--concurrency 32] [--pg postgresql://postgres@127.0.0.1:5432/test]

Each cell starts `pluginsdk server start --workers N` on a fresh store, drives it for `--seconds` from this
process (httpx, `--concurrency` connections, API key auth), and reports requests/s and p50/p99 latency.
`read`: GET one template. `mixed`: 80 % GET one template, 20 % POST a new template (a write, a policy
decision, a unique key). The load generator shares the machine with the server: compare ratios, not
absolute figures. PostgreSQL cells are skipped when none is reachable. Prints the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
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

import httpx  # noqa: E402

from pluginsdk import PluginSDK  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def new_pg(admin_url: str) -> str | None:
    try:
        import asyncpg

        conn = await asyncio.wait_for(asyncpg.connect(admin_url), 3)
    except Exception:
        return None
    name = f"psdk_bench_{uuid.uuid4().hex[:8]}"
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


async def drop_pg(admin_url: str, url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    await conn.close()


async def prepare(config: dict[str, Any]) -> str:
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        created = await sdk.create_api_key(api_key_name="bench", description="bench key", user_id="administrator")
        return str(created.api_key)


async def drive(url: str, key: str, mix: str, seconds: float, concurrency: int) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": key}, limits=limits, timeout=30) as c:

        async def one() -> None:
            nonlocal errors
            rnd = random.Random()
            while time.monotonic() < stop:
                started = time.perf_counter()
                if mix == "mixed" and rnd.random() < 0.2:
                    r = await c.post(
                        "/api/v1/templates", json={"template_id": f"t-{uuid.uuid4().hex[:12]}", "image_id": "ami-1"}
                    )
                else:
                    r = await c.get("/api/v1/templates/web")
                latencies.append(time.perf_counter() - started)
                if r.status_code >= 400:
                    errors += 1

        began = time.monotonic()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        took = time.monotonic() - began
    latencies.sort()
    return {
        "rps": len(latencies) / took,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99) - 1],
        "errors": errors,
    }


async def cell(db: str, config: dict[str, Any], workers: int, args: argparse.Namespace) -> dict[str, Any]:
    key = await prepare(config)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "c.json"
        cfg.write_text(json.dumps(config))
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "pluginsdk", "--config", str(cfg), "server", "start", "--port", str(port),
             "--workers", str(workers)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient() as c:
                for _ in range(600):
                    try:
                        if (await c.get(f"{url}/readyz")).status_code == 200:
                            break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
            await asyncio.sleep(0.5 * workers)  # the other workers finish starting too
            out = {}
            for mix in ("read", "mixed"):
                out[mix] = await drive(url, key, mix, args.seconds, args.concurrency)
            return {"db": db, "workers": workers, **out}
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


async def policy_check_cost(pg: str | None, n: int = 3000) -> list[tuple[str, float, float]]:
    """µs per decision spent on the version check: reading the row every time (before) vs the watch (after)."""
    rows = []
    targets: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        targets.append(("sqlite", {"storage": {"path": f"{tmp}/p.db"}}))
        if pg:
            targets.append(
                ("postgresql", {"storage": {"type": "postgresql", "url": pg, "seal_key_file": f"{tmp}/s.key"}})
            )
        for name, config in targets:
            async with PluginSDK(config=config) as sdk:
                svc = sdk.backend.engine.authz  # type: ignore[attr-defined]
                await svc.snapshot()
                t = time.perf_counter()
                for _ in range(n):
                    await svc.store.policy_version()
                before = (time.perf_counter() - t) / n * 1e6
                t = time.perf_counter()
                for _ in range(n):
                    await svc.watch.version(svc.store.policy_version)
                after = (time.perf_counter() - t) / n * 1e6
                rows.append((name + (" (listening)" if svc.watch.live else " (no listener: reads)"), before, after))
    return rows


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            config = {"storage": {"path": f"{tmp}/w{workers}.db"}, "logging": {"level": "WARNING"}}
            results.append(await cell("sqlite", config, workers, args))
            pg = await new_pg(args.pg)
            if pg is None:
                print("PostgreSQL not reachable: its cells are skipped")
                continue
            try:
                pg_config = {
                    "storage": {"type": "postgresql", "url": pg, "seal_key_file": f"{tmp}/seal{workers}.key"},
                    "logging": {"level": "WARNING"},
                }
                results.append(await cell("postgresql", pg_config, workers, args))
            finally:
                await drop_pg(args.pg, pg)
        pg = await new_pg(args.pg)
        try:
            cost = await policy_check_cost(pg)
        finally:
            if pg:
                await drop_pg(args.pg, pg)
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  (cpus: {os.cpu_count()})")
    print(
        f"{'db':<11} {'workers':>7} {'mix':<6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} {'vs 1 worker':>11}"
    )
    base: dict[tuple[str, str], float] = {}
    for r in results:
        for mix in ("read", "mixed"):
            m = r[mix]
            if r["workers"] == 1:
                base[(r["db"], mix)] = m["rps"]
            ratio = m["rps"] / base[(r["db"], mix)] if (r["db"], mix) in base else float("nan")
            print(
                f"{r['db']:<11} {r['workers']:>7} {mix:<6} {m['rps']:>8.0f} {m['p50_ms']:>8.1f} {m['p99_ms']:>8.1f} {m['errors']:>6} {ratio:>10.2f}x"
            )
    print(f"\n{'policy-version check per decision':<40} {'before µs':>10} {'after µs':>10} {'ratio':>7}")
    for name, before, after in cost:
        print(f"{name:<40} {before:>10.1f} {after:>10.2f} {before / after:>6.0f}x")


if __name__ == "__main__":
    asyncio.run(main())
