"""The authenticated REST read and the console page through HAProxy on three servers against one server
directly, per-request CPU; and the console page's cost with sessions held in the store against a tree from
before (sessions in the process's memory):

    .venv/bin/python bench/fleet_bench.py [--requests 3000 --concurrency 8]
    .venv/bin/python bench/fleet_bench.py --before /tmp/before [--requests 600 --rounds 6]

Starts the fleet of tests/support/fleet.py (three `pluginsdk server start` processes on one fresh PostgreSQL
database, HAProxy round-robin in front) and sends `GET /api/v1/templates/web` with an administrator's API key,
first straight to one server, then through HAProxy, over keep-alive connections (httpx, `--concurrency`
at once). Per-request CPU is the CPU time (user + system, from /proc) the serving processes spent during the run —
the one server; the three servers and HAProxy — divided by the requests: what the fleet costs a read on top
of one server (HAProxy's health checks, every 0.3 s per server, included).
The console page is `GET /ui/templates` with a signed-in session cookie (signed in once with the API key).
`--before TREE` (a source tree of an earlier commit, e.g. `git archive 6006e7a | tar -x -C /tmp/before`)
instead starts one server from TREE and one from this tree, each on a fresh SQLite store its own code made,
and reads the console page from each in alternating rounds (A B A B ...): per-request server CPU of each,
the ratio per round and its median — what store-held sessions add to a page.
Needs PostgreSQL on 127.0.0.1:5432 and HAProxy. Prints a table; `--json FILE` keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.backends import base_config  # noqa: E402
from tests.support.fleet import fleet, free_port  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes have used so far."""
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


async def _session_cookie(url: str, key: str) -> dict[str, str]:
    """A console session: the sign-in form posted with the API key; the cookies it set."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        form = await client.get("/ui/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert token, form.text[:300]
        signed = await client.post("/ui/login", data={"csrf": token[1], "api_key": key, "next": "/ui/"})
        assert signed.status_code == 303, signed.text[:300]
        return dict(client.cookies.items())


async def _drive(
    url: str,
    key: str,
    requests: int,
    concurrency: int,
    *,
    path: str = "/api/v1/templates/web",
    cookies: dict[str, str] | None = None,
) -> float:
    """Send the reads (with the API key, or the console session's `cookies`); the wall seconds they took."""
    left = iter(range(requests))
    headers = {} if cookies else {"authorization": key}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, headers=headers, cookies=cookies, limits=limits, timeout=30) as client:

        async def worker() -> None:
            for _ in left:
                answer = await client.get(path)
                assert answer.status_code == 200 and "/ui/login" not in str(answer.url), answer.text[:300]

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
            cookies = await _session_cookie(f.url, f.key)
            results: dict[str, dict[str, float]] = {}
            for name, url, serving, path in (
                ("REST, one server", f.servers[0].url, servers[:1], "/api/v1/templates/web"),
                ("REST, three + HAProxy", f.url, servers, "/api/v1/templates/web"),
                ("console, one server", f.servers[0].url, servers[:1], "/ui/templates"),
                ("console, three + HAProxy", f.url, servers, "/ui/templates"),
            ):
                jar = cookies if path.startswith("/ui/") else None
                await _drive(url, f.key, min(300, requests), concurrency, path=path, cookies=jar)  # warm-up
                before, proxy = _cpu(serving), _cpu([balancer])
                wall = await _drive(url, f.key, requests, concurrency, path=path, cookies=jar)
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


_MAKE_KEY = """
import asyncio, sys
from pluginsdk import PluginSDK
async def main():
    async with PluginSDK(config={"storage": {"path": sys.argv[1]}}) as sdk:
        made = await sdk.create_api_key(api_key_name="bench", description="bench", user_id="administrator")
        print(made.api_key)
asyncio.run(main())
"""


async def _one_server(tree: Path, tmp: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """`pluginsdk server start` from `tree` on a fresh SQLite store of its own: (process, URL, admin key)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    store = tmp / "store.db"
    key = (
        subprocess.run(
            [sys.executable, "-c", _MAKE_KEY, str(store)], env=env, check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    config = tmp / "config.json"
    config.write_text(json.dumps({"storage": {"path": str(store)}, "sdk": {"reconcile_interval": 60}}))
    port = free_port()
    with (tmp / "server.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pluginsdk", "--config", str(config), "server", "start", "--port", str(port)],
            env=env, stdout=log, stderr=log, cwd=tmp,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient() as client:
        for _ in range(600):
            try:
                if (await client.get(f"{url}/readyz")).status_code == 200:
                    return proc, url, key
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"server from {tree} did not start: {(tmp / 'server.log').read_text()[-2000:]}")


async def _versus(before: Path, requests: int, concurrency: int, rounds: int) -> dict[str, Any]:
    """The console page from a server of `before` and one of this tree, alternating rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        for name, tree in (("before", before), ("now", ROOT)):
            (Path(tmp) / name).mkdir()
            servers[name] = await _one_server(tree, Path(tmp) / name)
        try:
            cookies = {n: await _session_cookie(url, key) for n, (_, url, key) in servers.items()}
            per: dict[str, list[float]] = {n: [] for n in servers}
            for n, (_, url, key) in servers.items():  # warm-up
                await _drive(url, key, min(200, requests), concurrency, path="/ui/templates", cookies=cookies[n])
            for _ in range(rounds):
                for n, (proc, url, key) in servers.items():
                    start = _cpu([proc.pid])
                    await _drive(url, key, requests, concurrency, path="/ui/templates", cookies=cookies[n])
                    per[n].append((_cpu([proc.pid]) - start) / requests * 1e6)
        finally:
            for proc, _, _ in servers.values():
                proc.terminate()
                proc.wait(30)
    ratios = [a / b for a, b in zip(per["now"], per["before"], strict=True)]
    return {"cpu_us": per, "ratios": ratios, "median_ratio": statistics.median(ratios)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--before", type=Path, default=None, help="a source tree to compare the console page with")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.before is not None:
        results: Any = asyncio.run(_versus(args.before, args.requests, args.concurrency, args.rounds))
        print(f"{'round':<8}{'before µs':>12}{'now µs':>12}{'now/before':>12}")
        per, ratios = results["cpu_us"], results["ratios"]
        for i, (a, b, r) in enumerate(zip(per["before"], per["now"], ratios, strict=True)):
            print(f"{i + 1:<8}{a:>12.0f}{b:>12.0f}{r:>12.3f}")
        print(f"median now/before: {results['median_ratio']:.3f}")
    else:
        results = asyncio.run(_measure(args.requests, args.concurrency))
        print(f"{'path':<26}{'CPU µs/request':>16}{'of it HAProxy':>15}{'vs one server':>15}{'req/s (wall)':>14}")
        for name, r in results.items():
            base = results[name.split(",")[0] + ", one server"]["cpu_us"]
            ratio = r["cpu_us"] / base
            print(f"{name:<26}{r['cpu_us']:>16.0f}{r['haproxy_cpu_us']:>15.0f}{ratio:>14.2f}x{r['wall_rps']:>14.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
