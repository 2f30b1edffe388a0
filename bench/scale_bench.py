"""Scale-out benchmark (issue 16), one command for the whole table: authenticated reads and a read/write mix,
1 and 2 workers, SQLite and PostgreSQL; then the per-decision cost of the policy-version check before and after
LISTEN/NOTIFY; then the sizing figures docs/deployment.md quotes.

    python bench/scale_bench.py [--seconds 5] [--connections 32] [--pg postgresql://postgres@127.0.0.1:5432/test]

Each cell starts `pluginsdk server start --workers N` on a fresh store (an API key, one template) and `wrk`
(Debian package) drives it for `--seconds` per mix with the key: `read` = GET one template; `mixed` = 80 % that
GET, 20 % POST a new template (bench/scale_mixed.lua). Per cell: requests/s, p50/p99 latency (wrk's), answers
that were not 2xx, and the CPU time the server's processes spent per request (/proc: user + system of the
supervisor and its workers) — the figure that survives a shared box best. Runs in 2–3 minutes with the
defaults; PostgreSQL cells are skipped when none is reachable. The output is
Markdown, ready for docs/benchmarks.md ("Scale-out"), with the load average and core count of the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
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
from server_bench import free_port, wrk  # noqa: E402

from pluginsdk import PluginSDK  # noqa: E402

MIXED = str(Path(__file__).with_name("scale_mixed.lua"))


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


async def ready(url: str, proc: subprocess.Popen[bytes], workers: int) -> None:
    """Until /readyz answers 200 on as many fresh connections as there are workers (each may take one)."""
    deadline, answered = time.monotonic() + 120, 0
    while answered < 4 * workers:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"server did not start (exit {proc.poll()})")
        try:
            async with httpx.AsyncClient() as c:
                answered += (await c.get(f"{url}/readyz")).status_code == 200
        except httpx.TransportError:
            await asyncio.sleep(0.1)


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
            await ready(url, proc, workers)
            out = {}
            for mix, script in (("read", None), ("mixed", MIXED)):
                out[mix] = await asyncio.to_thread(
                    wrk, f"{url}/api/v1/templates/web", {"Authorization": key}, args.seconds, args.connections,
                    proc.pid, script,
                )  # fmt: skip
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


async def run_cells(args: argparse.Namespace, tmp: str) -> list[dict[str, Any]]:
    results = []
    for workers in (1, 2):
        config = {"storage": {"path": f"{tmp}/w{workers}.db"}, "logging": {"level": "WARNING"}}
        results.append(await cell("sqlite", config, workers, args))
        pg = await new_pg(args.pg)
        if pg is None:
            print("PostgreSQL not reachable: its cells are skipped", file=sys.stderr)
            continue
        try:
            pg_config = {
                "storage": {"type": "postgresql", "url": pg, "seal_key_file": f"{tmp}/seal{workers}.key"},
                "logging": {"level": "WARNING"},
            }
            results.append(await cell("postgresql", pg_config, workers, args))
        finally:
            await drop_pg(args.pg, pg)
    return results


def print_cells(results: list[dict[str, Any]]) -> None:
    print("| db | workers | mix | req/s | p50 ms | p99 ms | not 2xx | server CPU µs/req | vs 1 worker |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    base: dict[tuple[str, str], float] = {}
    for r in sorted(results, key=lambda r: (r["db"] != "sqlite", r["workers"])):
        for mix in ("read", "mixed"):
            m = r[mix]
            base.setdefault((r["db"], mix), m["rps"])
            print(
                f"| {r['db']} | {r['workers']} | {mix} | {m['rps']:,.0f} | {m['p50_ms']:.1f} | {m['p99_ms']:.1f} "
                f"| {m['non2xx']:.0f} | {m['cpu_us']:,.0f} | {m['rps'] / base[(r['db'], mix)]:.2f}x |"
            )


def print_sizing(results: list[dict[str, Any]]) -> None:
    """What docs/deployment.md's "Sizing" quotes: requests one core of server CPU serves (1e6 / CPU µs per
    request, from the 1-worker cells), and the 2-worker gain as measured."""
    print("\nSizing (docs/deployment.md): requests/s one core of server CPU serves, and the 2-worker gain")
    print("| db | mix | req/s per core (1 worker) | 2 workers / 1 worker |")
    print("|---|---|---:|---:|")
    by = {(r["db"], r["workers"]): r for r in results}
    for (db, workers), r in sorted(by.items(), key=lambda kv: (kv[0][0] != "sqlite", kv[0][1])):
        if workers != 1:
            continue
        for mix in ("read", "mixed"):
            two = by.get((db, 2))
            gain = f"{two[mix]['rps'] / r[mix]['rps']:.2f}x" if two else "-"
            print(f"| {db} | {mix} | {1e6 / r[mix]['cpu_us']:,.0f} | {gain} |")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=5, help="wrk run per mix and cell")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test", help="admin URL (a DB per cell)")
    args = ap.parse_args()
    if not __import__("shutil").which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        results = await run_cells(args, tmp)
        pg = await new_pg(args.pg)
        try:
            cost = await policy_check_cost(pg)
        finally:
            if pg:
                await drop_pg(args.pg, pg)
    load = " → ".join(" ".join(f"{x:.2f}" for x in la) for la in (load_before, os.getloadavg()))
    print(f"\nload average {load}; {os.cpu_count()} CPUs; wrk -t2 -c{args.connections} -d{args.seconds}s\n")
    print_cells(results)
    print("\nPolicy-version check per decision (µs, mean of 3,000 in-process calls)")
    print("| store | before (read the version row) | after (watch) | ratio |")
    print("|---|---:|---:|---:|")
    for name, before, after in cost:
        print(f"| {name} | {before:,.1f} | {after:,.2f} | {before / after:,.{0 if before > 10 * after else 2}f}x |")
    print_sizing(results)


if __name__ == "__main__":
    asyncio.run(main())
