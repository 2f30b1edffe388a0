"""REST server benchmark (issue 4): request status by id over loopback, ours against orb-py's server.

    python bench/server_bench.py [--seconds 10] [--connections 64] [--rounds 3] [--baseline DIR]

Each server runs in its own process with one uvicorn worker, both up for the whole run; `wrk` (Debian
package) drives them in turn, `--rounds` times each (ours, the peer's, ours, ...), with 64 connections and
2 threads, reading the same request by id (ours with an API key; orb's API runs without auth by default, the
header is sent anyway). After each pair of runs the remote SDK's per-call overhead over the local engine is
measured (p50 of 2,000 sequential calls). Prints each round, then one table of medians with the load
average, since the box may be shared. `--baseline DIR` also serves a copy of the same store from another
checkout of this project (e.g. `git worktree add /tmp/base main`) and prints our ratio to it: the A/B
that survives a loaded box better than absolute figures. Before measuring, the body limit is probed (a
declared 2 MiB body must be refused with 413), so the figures are those of the server with its limits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PEER_PY = ROOT / "bench" / ".peer" / "venv" / "bin" / "python"
PEER_ORB = ROOT / "bench" / ".peer" / "venv" / "bin" / "orb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError as exc:
            if getattr(exc, "code", None):  # an HTTP error status means it is up
                return
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    tree, total, frontier = {pid}, 0.0, [pid]
    while frontier:
        parent = frontier.pop()
        total += stats.get(parent, (0, 0.0))[1]
        children = [p for p, (pp, _) in stats.items() if pp == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return total


def wrk(
    url: str, headers: dict[str, str], seconds: int, connections: int, pid: int, script: str | None = None
) -> dict[str, float]:
    """One wrk run against `url` (`script`: a wrk Lua file shaping the requests); the server's CPU per request."""
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", *(["-s", script] if script else [])]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    cpu, wall = cpu_seconds(pid) - cpu0, time.monotonic() - wall0
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]

    def lat(p: str) -> float:
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": rps,
        "p50_ms": lat("50"),
        "p99_ms": lat("99"),
        "non2xx": float(non2xx.group(1)) if non2xx else 0.0,
        "cpu_us": cpu / max(total, 1) * 1e6,
        "busy": cpu / wall * 100,
    }


async def seed_ours(config: dict[str, Any], requests: int) -> tuple[str, str]:
    from pluginsdk import PluginSDK

    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        ids = [(await sdk.create_request("web", 1, wait=True)).id for _ in range(requests)]
        key = await sdk.create_api_key(api_key_name="bench", description="benchmark key", user_id="administrator")
        return ids[len(ids) // 2], str(key.api_key)


async def remote_overhead(config: dict[str, Any], url: str, key: str, rid: str, n: int) -> dict[str, float]:
    from pluginsdk import PluginSDK

    async def p50(sdk: PluginSDK) -> float:
        for _ in range(50):
            await sdk.get_request(rid)
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            await sdk.get_request(rid)
            samples.append(time.perf_counter() - t)
        samples.sort()
        return samples[len(samples) // 2] * 1e6

    async with PluginSDK(config=config) as local:
        local_us = await p50(local)
    async with PluginSDK(backend="remote", api_url=url, api_key=key, config=config) as remote:
        remote_us = await p50(remote)
    return {"local_p50_us": local_us, "remote_p50_us": remote_us, "overhead_us": remote_us - local_us}


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def start_ours(args: argparse.Namespace, tmp: Path) -> tuple[subprocess.Popen[bytes], str, str, str, dict[str, Any]]:
    """Our server on a seeded store (through `serve()`, exactly as `pluginsdk server` runs it)."""
    config = {"storage": {"path": str(tmp / "ours.db")}, "provider": {"local": {"boot_delay": 0.0}}}
    rid, key = asyncio.run(seed_ours(config, args.requests))
    proc, url = serve_checkout(ROOT, config, tmp / "ours-server.log")
    return proc, url, key, rid, config


def serve_checkout(root: Path, config: dict[str, Any], log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`serve()` of the project checkout at `root` (its own code first on the path) on `config`'s store."""
    port = free_port()
    code = (
        "from pluginsdk.config import load_settings; from pluginsdk.server import serve; "
        f"serve(load_settings(config={config!r}), '127.0.0.1', {port})"
    )
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=log, cwd=root, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/health")
    except RuntimeError:
        proc.kill()
        sys.exit(log_path.read_text()[-3000:])
    return proc, url


def start_baseline(root: Path, config: dict[str, Any], tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The baseline checkout serving a copy of our seeded store (same data, same key)."""
    store = Path(config["storage"]["path"])
    copy = tmp / "baseline.db"
    shutil.copyfile(store, copy)
    key = store.with_name(store.name + ".key")  # the sealing key file lives beside the store
    if key.exists():
        shutil.copyfile(key, copy.with_name(copy.name + ".key"))
    return serve_checkout(root, {**config, "storage": {"path": str(copy)}}, tmp / "baseline-server.log")


def probe_body_limit(url: str) -> int:
    """The status of an unauthenticated POST declaring a 2 MiB body (its body never sent)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n")
        return int(sock.recv(4096).split(b" ", 2)[1])


def start_peer(args: argparse.Namespace, tmp: Path) -> tuple[subprocess.Popen[bytes], str, str] | None:
    if not PEER_ORB.exists():
        print("peer venv missing (bench/.peer/venv with orb-py): peer skipped", file=sys.stderr)
        return None
    sys.path.insert(0, str(ROOT / "bench"))
    from peer_orb import env_for, seed

    work = tmp / "orb"
    env = env_for(work)
    subprocess.run(
        [str(PEER_ORB), "init", "--non-interactive", "--force", "--aws-region", "us-east-1",
         "--config-dir", str(work / "config")],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    # orb's token-bucket rate limiter off, as its configuration says to do for benchmarks: with it on, nearly every
    # answer under this load is a 429, and its req/s would count refusals rather than reads
    cfg_file = work / "config" / "config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg.setdefault("server", {})["rate_limiting"] = {"enabled": False}
    cfg_file.write_text(json.dumps(cfg, indent=2))
    ids = seed(work, 10, args.requests)
    port = free_port()
    proc = subprocess.Popen(
        [str(PEER_ORB), "server", "start", "--foreground", "--api-only", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--server-log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/health")
    rid = ids[len(ids) // 2]
    probe = urllib.request.urlopen(f"{url}/api/v1/requests/{rid}", timeout=30)
    if probe.status != 200:
        print(f"peer answered {probe.status} for a stored request", file=sys.stderr)
    return proc, url, rid


def median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3, help="wrk runs per server, alternating ours and the peer's")
    ap.add_argument("--requests", type=int, default=1000, help="requests stored in each system")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--baseline", type=Path, help="another checkout of this project to compare with (A/B)")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")
    os.environ.pop("PLUGIN_CONFIG", None)
    load_before = os.getloadavg()
    ours_rows: list[dict[str, float]] = []
    peer_rows: list[dict[str, float]] = []
    base_rows: list[dict[str, float]] = []
    overheads: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        ours_proc, url, key, rid, config = start_ours(args, Path(tmp))
        peer = base = None
        try:
            print(f"body limit probe: {probe_body_limit(url)} for a declared 2 MiB body", file=sys.stderr)
            base = start_baseline(args.baseline.resolve(), config, Path(tmp)) if args.baseline else None
            peer = None if args.no_peer else start_peer(args, Path(tmp))
            for n in range(args.rounds):
                ours_rows.append(
                    wrk(f"{url}/api/v1/requests/{rid}", {"Authorization": key}, args.seconds, args.connections,
                        ours_proc.pid)
                )  # fmt: skip
                o = ours_rows[-1]
                line = (
                    f"round {n + 1}: pluginsdk {o['rps']:,.0f} req/s p99 {o['p99_ms']:.1f} ms "
                    f"({o['cpu_us']:.0f} µs CPU/req, {o['busy']:.0f}% busy)"
                )
                if base is not None:
                    base_rows.append(
                        wrk(f"{base[1]}/api/v1/requests/{rid}", {"Authorization": key}, args.seconds,
                            args.connections, base[0].pid)
                    )  # fmt: skip
                    b = base_rows[-1]
                    line += f"; baseline {b['rps']:,.0f} req/s ({b['cpu_us']:.0f} µs CPU/req)"
                if peer is not None:
                    peer_url, peer_rid = peer[1], peer[2]
                    peer_rows.append(
                        wrk(f"{peer_url}/api/v1/requests/{peer_rid}", {"Authorization": "unused"}, args.seconds,
                            args.connections, peer[0].pid)
                    )  # fmt: skip
                    q = peer_rows[-1]
                    line += f"; orb-py {q['rps']:,.0f} req/s p99 {q['p99_ms']:.1f} ms ({q['cpu_us']:.0f} µs CPU/req, {q['busy']:.0f}% busy)"
                overheads.append(asyncio.run(remote_overhead(config, url, key, rid, 2000)))
                line += f"; remote overhead {overheads[-1]['overhead_us']:.0f} µs"
                print(line, file=sys.stderr, flush=True)
        finally:
            stop(ours_proc)
            if base is not None:
                stop(base[0])
            if peer is not None:
                stop(peer[0])
    load_after = os.getloadavg()
    print(f"\nGET request status by id, {args.connections} connections, {args.seconds}s × {args.rounds} rounds "
          f"(medians), 1 worker each, {args.requests} stored requests; {os.cpu_count()} CPUs, load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after\n")  # fmt: skip
    print("| server | req/s | p50 (ms) | p99 (ms) | non-2xx | server CPU per request (µs) | server busy |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rows in (("pluginsdk", ours_rows), ("baseline", base_rows), ("orb-py", peer_rows)):
        if rows:
            print(f"| {name} | {median(rows, 'rps'):,.0f} | {median(rows, 'p50_ms'):.1f} | "
                  f"{median(rows, 'p99_ms'):.1f} | {median(rows, 'non2xx'):,.0f} | {median(rows, 'cpu_us'):,.0f} | "
                  f"{median(rows, 'busy'):.0f}% |")  # fmt: skip
    if base_rows:
        print(f"\npluginsdk / baseline: throughput {median(ours_rows, 'rps') / median(base_rows, 'rps'):.2f}×, "
              f"server CPU per request {median(ours_rows, 'cpu_us') / median(base_rows, 'cpu_us'):.2f}×")  # fmt: skip
    if peer_rows:
        print(f"\nthroughput ratio pluginsdk / orb-py: {median(ours_rows, 'rps') / median(peer_rows, 'rps'):.1f}×")
    print(f"\nremote SDK get_request p50 {median(overheads, 'remote_p50_us'):.0f} µs vs local "
          f"{median(overheads, 'local_p50_us'):.0f} µs: overhead {median(overheads, 'overhead_us'):.0f} µs")  # fmt: skip


if __name__ == "__main__":
    main()
