"""The orb-py side of bench/sdk_bench.py. Runs inside the peer's venv (bench/.peer/venv), never ours.

    bench/.peer/venv/bin/python bench/peer_orb.py --workdir DIR [--templates N --requests N --samples N --n N]

orb keeps requests in one JSON file (`<work>/data/request_database.json`) and templates in
`<config>/aws_templates.json`. Seeding through its SDK would rewrite the whole file per request, so
the files are written directly in the exact format orb itself wrote for one template and one request
(captured with orb-py 1.8.5). Prints one JSON line with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

_STARTUP = """
import time, json
t0 = time.perf_counter()
import asyncio
from orb.sdk.client import ORBClient
async def main():
    async with ORBClient(provider="aws") as sdk:
        t1 = time.perf_counter()
        rss = int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]) / 1024
        print(json.dumps({"startup_s": t1 - t0, "rss_mb": rss}))
asyncio.run(main())
"""


def env_for(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ORB_ROOT_DIR=str(work),
        ORB_WORK_DIR=str(work / "work"),
        ORB_CONFIG_DIR=str(work / "config"),
        ORB_LOG_DIR=str(work / "logs"),
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",  # never a real credential; no network here
        AWS_DEFAULT_REGION="us-east-1",
    )
    return env


def seed(work: Path, templates: int, requests: int) -> list[str]:
    (work / "config").mkdir(parents=True, exist_ok=True)
    (work / "work" / "data").mkdir(parents=True, exist_ok=True)
    tpls = [
        {"template_id": f"tpl-{i:05d}", "name": f"tpl-{i:05d}", "image_id": "ami-12345678", "max_instances": 10,
         "machine_types": {"t3.small": 1}, "machine_types_ondemand": {}, "machine_types_priority": {},
         "subnet_ids": [], "security_group_ids": [], "price_type": "ondemand", "network_zones": [], "tags": {},
         "metadata": {}, "provider_data": {}, "provider_api": "EC2Fleet", "is_active": True}
        for i in range(templates)
    ]  # fmt: skip
    (work / "config" / "aws_templates.json").write_text(json.dumps({"scheduler_type": "default", "templates": tpls}))
    now = "2026-11-22T16:34:31.742740+00:00"
    ids = [f"req-{uuid.UUID(int=i + 1)}" for i in range(requests)]
    recs: dict[str, Any] = {}
    for i, rid in enumerate(ids):
        recs[rid] = {
            "request_id": rid, "template_id": f"tpl-{i % max(templates, 1):05d}", "machine_count": 2,
            "requested_count": 2, "desired_capacity": 2, "request_type": "acquire", "status": "complete",
            "status_message": "done", "provider_name": "aws-default", "provider_api": "EC2Fleet",
            "provider_type": "aws", "resource_ids": [], "machine_ids": [f"i-{i:08d}0", f"i-{i:08d}1"],
            "message": "done", "successful_count": 2, "failed_count": 0, "metadata": {"dry_run": False},
            "error_details": {}, "provider_data": {}, "created_at": now, "started_at": now, "completed_at": now,
            "first_status_check": None, "last_status_check": None, "deadline_at": now, "partial_since": None,
            "last_transition_at": now,
        }  # fmt: skip
    (work / "work" / "data" / "request_database.json").write_text(json.dumps({"requests": recs}))
    return ids


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


async def latency(ids: list[str], n: int, budget_s: float = 40.0) -> tuple[dict[str, float], list[str]]:
    from orb.sdk.client import ORBClient

    out: dict[str, float] = {}
    notes: list[str] = []
    async with ORBClient(provider="aws") as sdk:

        async def timeit(name: str, call: Any, count: int) -> None:
            await call(0)
            samples: list[float] = []
            stop = time.perf_counter() + budget_s
            for i in range(count):
                t = time.perf_counter()
                await call(i)
                samples.append(time.perf_counter() - t)
                if time.perf_counter() > stop:
                    notes.append(f"{name}: {len(samples)} samples in the {budget_s:.0f}s budget")
                    break
            out[f"{name} p50_us"] = pct(samples, 0.5) * 1e6
            out[f"{name} p99_us"] = pct(samples, 0.99) * 1e6

        step = max(1, len(ids) // n)
        # orb's get_request returns None (checked with 1.8.5); get_request_status is its working read.
        probe = await sdk.get_request(request_id=ids[0])
        if probe is None:
            notes.append("orb get_request returns None; timed get_request_status instead")
        await timeit("get_request", lambda i: sdk.get_request_status(request_id=ids[(i * step) % len(ids)]), n)
        await timeit(
            "get_request long",
            lambda i: sdk.get_request_status(request_id=ids[(i * step) % len(ids)], long=True),
            n,
        )
        await timeit("list_templates (50)", lambda i: sdk.list_templates(limit=50), max(50, n // 20))
        await timeit("list_templates (1000)", lambda i: sdk.list_templates(limit=1000), max(20, n // 100))
    return out, notes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--templates", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    work = Path(args.workdir)
    ids = seed(work, args.templates, args.requests)
    env = env_for(work)
    os.environ.update(env)
    runs = []
    for _ in range(args.samples):
        t = time.perf_counter()
        res = subprocess.run([sys.executable, "-c", _STARTUP], capture_output=True, text=True, env=env, check=True)
        wall = time.perf_counter() - t
        runs.append({**json.loads(res.stdout.strip().splitlines()[-1]), "wall_s": wall})
    figures, notes = asyncio.run(latency(ids, args.n))
    print(
        json.dumps(
            {
                "startup_ms": statistics.median(r["startup_s"] for r in runs) * 1e3,
                "wall_ms": statistics.median(r["wall_s"] for r in runs) * 1e3,
                "rss_mb": statistics.median(r["rss_mb"] for r in runs),
                **figures,
                "notes": notes,
            }
        )
    )


if __name__ == "__main__":
    main()
