"""SDK benchmark: in-process start-up, RSS and latency (issue 2); the remote client against bare httpx (issue 14).

    python bench/sdk_bench.py [--quick] [--no-peer]     # everything
    python bench/sdk_bench.py --remote-only [--n 2000]  # only the remote client against bare httpx

In-process: our `PluginSDK` and, in the same run, the peer orb-py (`bench/peer_orb.py`, run in its own venv
`bench/.peer/venv` so the two never share imports). Remote: one pluginsdk server in its own process on the
seeded store; the remote SDK's `get_request` and a bare `httpx.AsyncClient` GET of the same URL (same
headers) take turns in rounds, each call timed; the table gives the p50/p99 of all samples and the ratio
(target: SDK p50 ≤ 1.3× bare httpx). Prints tables with ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def remote_vs_httpx(store: str, ids: list[str], n: int, rounds: int = 5) -> dict[str, dict[str, float]]:
    """The remote SDK's get_request against a bare httpx GET of the same URL, same server, same run."""
    import httpx

    from pluginsdk import PluginSDK

    config = {"storage": {"path": store}}

    async def issue_key() -> str:
        async with PluginSDK(config=config) as sdk:
            made = await sdk.create_api_key(api_key_name=f"bench-{uuid.uuid4().hex[:8]}", description="benchmark key",
                                            user_id="administrator")  # fmt: skip
            return str(made.api_key)

    key = asyncio.run(issue_key())
    port = _free_port()
    code = (
        "from pluginsdk.config import load_settings; from pluginsdk.server import serve; "
        f"serve(load_settings(config={config!r}), '127.0.0.1', {port})"
    )
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    rid = ids[len(ids) // 2]
    target = f"{url}/api/v1/requests/{rid}?long=false&lightweight=false"  # exactly what the SDK sends

    async def run() -> dict[str, list[float]]:
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient(headers={"Authorization": key}) as bare:
            while True:
                try:
                    if (await bare.get(f"{url}/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                await asyncio.sleep(0.1)
            async with PluginSDK(backend="remote", api_url=url, api_key=key, config={}) as sdk:
                assert (await bare.get(target)).json()["request_id"] == (await sdk.get_request(rid)).request_id
                samples: dict[str, list[float]] = {"httpx": [], "sdk": []}
                cpu = {"httpx": 0.0, "sdk": 0.0}
                calls = {"httpx": lambda: bare.get(target), "sdk": lambda: sdk.get_request(rid)}
                for call in calls.values():  # warm both
                    for _ in range(100):
                        await call()
                for _ in range(rounds):
                    for name, call in calls.items():
                        c = time.process_time()
                        for _ in range(n // rounds):
                            t = time.perf_counter()
                            await call()
                            samples[name].append(time.perf_counter() - t)
                        cpu[name] += time.process_time() - c
                return {**samples, **{f"{k} cpu": [v / len(samples[k])] for k, v in cpu.items()}}

    try:
        samples = asyncio.run(run())
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    out = {name: {"p50_us": pct(v, 0.5) * 1e6, "p99_us": pct(v, 0.99) * 1e6} for name, v in samples.items()}
    for name in ("httpx", "sdk"):  # this process's CPU per call: the client's own cost, least disturbed by load
        out[name]["cpu_us"] = out.pop(f"{name} cpu")["p50_us"]
    return out


def print_remote(result: dict[str, dict[str, float]], n: int) -> None:
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nremote get_request vs bare httpx GET, {n} calls each in 5 alternating rounds; load average {load}\n")
    print("| metric | bare httpx.AsyncClient | remote SDK | SDK / httpx | target |\n|---|---:|---:|---:|---|")
    for q, label in (("p50_us", "p50 (µs)"), ("p99_us", "p99 (µs)"), ("cpu_us", "client CPU per call (µs)")):
        bare, ours = result["httpx"][q], result["sdk"][q]
        target = "≤ 1.3×" if q == "p50_us" else ""
        print(f"| get_request {label} | {bare:,.0f} | {ours:,.0f} | {ours / bare:.2f}× | {target} |")


def peer(args: argparse.Namespace, workdir: Path) -> dict[str, Any] | None:
    python = ROOT / "bench" / ".peer" / "venv" / "bin" / "python"
    if not python.exists():
        print(
            "peer venv missing: run `python3 -m venv bench/.peer/venv && bench/.peer/venv/bin/pip install orb-py==1.8.5`"
            " to compare with orb-py",
            file=sys.stderr,
        )
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
    ap.add_argument("--remote-only", action="store_true", help="only the remote client against bare httpx")
    ap.add_argument("--remote-n", type=int, default=2000, help="calls per side in the remote comparison")
    args = ap.parse_args()
    if args.remote_only:
        with tempfile.TemporaryDirectory() as tmp:
            store = str(Path(tmp) / "bench.db")
            ids = seed(store, 10, 1000)
            print_remote(remote_vs_httpx(store, ids, args.remote_n), args.remote_n)
        return
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
        remote = remote_vs_httpx(store, ids, args.remote_n)
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
    print_remote(remote, args.remote_n)


if __name__ == "__main__":
    main()
