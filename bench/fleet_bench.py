"""The authenticated REST read through HAProxy on three servers against one server directly, per-request CPU:

    .venv/bin/python bench/fleet_bench.py [--requests 3000 --concurrency 8]

Starts the fleet of tests/support/fleet.py (three `pluginsdk server start` processes on one fresh PostgreSQL
database, HAProxy round-robin in front) and sends `GET /api/v1/templates/web` with an administrator's API key,
first straight to one server, then through HAProxy, over keep-alive connections (httpx, `--concurrency`
at once). Per-request CPU is the CPU time (user + system, from /proc) the serving processes spent during the run —
the one server; the three servers and HAProxy — divided by the requests: what the fleet costs a read on top
of one server (HAProxy's health checks, every 0.3 s per server, included).
Needs PostgreSQL on 127.0.0.1:5432 and HAProxy. Prints a table; `--json FILE` keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.backends import base_config  # noqa: E402
from tests.support.fleet import fleet  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes have used so far."""
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


async def _drive(url: str, key: str, requests: int, concurrency: int) -> float:
    """Send the reads; the wall seconds they took."""
    left = iter(range(requests))
    headers = {"authorization": key}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as client:

        async def worker() -> None:
            for _ in left:
                answer = await client.get("/api/v1/templates/web")
                assert answer.status_code == 200, answer.text

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started


async def _measure(requests: int, concurrency: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        quiet = base_config(Path(tmp), sdk={"reconcile_interval": 60})  # no background work during the run
        async with fleet("postgresql", quiet, Path(tmp)) as f:
            async with httpx.AsyncClient(headers={"authorization": f.key}) as client:
                made = await client.post(f"{f.url}/api/v1/templates", json={"template_id": "web", "image_id": "ami-1"})
                assert made.status_code == 201, made.text
            servers = [s.proc.pid for s in f.servers if s.proc is not None]
            balancer = _balancer_pid(servers)
            results: dict[str, dict[str, float]] = {}
            for name, url, serving in (
                ("one server, directly", f.servers[0].url, servers[:1]),
                ("three servers, HAProxy", f.url, servers),
            ):
                await _drive(url, f.key, min(300, requests), concurrency)  # warm-up
                before, proxy = _cpu(serving), _cpu([balancer])
                wall = await _drive(url, f.key, requests, concurrency)
                used, proxied = _cpu(serving) - before, _cpu([balancer]) - proxy
                results[name] = {
                    "cpu_us": (used + proxied) / requests * 1e6,
                    "haproxy_cpu_us": proxied / requests * 1e6,
                    "wall_rps": requests / wall,
                }
            return results


def _balancer_pid(servers: list[int]) -> int:
    """HAProxy, the child of this process that is not a server."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in servers:
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if "(haproxy)" in stat and stat.rsplit(")", 1)[1].split()[1] == me:
                return int(entry.name)
    raise RuntimeError("HAProxy not found")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results: Any = asyncio.run(_measure(args.requests, args.concurrency))
    base = results["one server, directly"]["cpu_us"]
    print(f"{'path':<26}{'CPU µs/request':>16}{'of it HAProxy':>15}{'vs one server':>15}{'req/s (wall)':>14}")
    for name, r in results.items():
        ratio = r["cpu_us"] / base
        print(f"{name:<26}{r['cpu_us']:>16.0f}{r['haproxy_cpu_us']:>15.0f}{ratio:>14.2f}x{r['wall_rps']:>14.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
