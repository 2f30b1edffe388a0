"""The orb-py side of bench/aws_bench.py. Runs inside the peer's venv (bench/.peer/venv), never ours.

Writes orb's config and one template in the formats orb-py 1.8.5 itself writes (`orb init`,
`orb templates generate`; orb needs a subnet and a security group), points boto3 at the counting proxy
with AWS_ENDPOINT_URL and fake credentials, then runs the same phases and polling schedule as our worker.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

AMI = "ami-760aaa0f"
FLEET_ROLE = "arn:aws:iam::123456789012:role/aws-ec2-spot-fleet-tagging-role"
DONE = {"complete", "completed", "failed", "partial", "complete_with_error", "cancelled"}


def calls(proxy: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{proxy}/__calls", timeout=10) as r:  # loopback only
        out: dict[str, int] = json.loads(r.read())
        return out


def diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


async def poll(check: Any, budget: float) -> bool:
    delay, deadline = 0.05, time.perf_counter() + budget
    while time.perf_counter() < deadline:
        if await check():
            return True
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 1.0)
    return False


def setup(args: argparse.Namespace) -> None:
    work = Path(args.workdir)
    (work / "config").mkdir(parents=True, exist_ok=True)
    (work / "work" / "data").mkdir(parents=True, exist_ok=True)
    os.environ.update(
        ORB_ROOT_DIR=str(work),
        ORB_WORK_DIR=str(work / "work"),
        ORB_CONFIG_DIR=str(work / "config"),
        ORB_LOG_DIR=str(work / "logs"),
        AWS_ENDPOINT_URL=args.proxy,
    )
    cfg = {
        "scheduler": {"type": "default"},
        "provider": {
            "providers": [
                {
                    "name": "aws-bench",
                    "type": "aws",
                    "enabled": True,
                    "config": {"profile": None, "region": "us-east-1", "fleet_role": FLEET_ROLE},
                }
            ],
            "default_provider_instance": "aws-bench",
        },
    }
    (work / "config" / "config.json").write_text(json.dumps(cfg))
    tpl = {
        "template_id": "bench", "name": "bench", "image_id": AMI, "max_machines": args.machines,
        "machine_types": {"t3.small": 1}, "machine_types_ondemand": {}, "machine_types_priority": {},
        "network_zones": [], "subnet_ids": args.subnets, "security_group_ids": args.sgs,
        "price_type": args.price_type, "allocation_strategy": "lowestPrice", "tags": {}, "provider_type": "aws",
        "provider_api": args.api, "metadata": {"fleet_type": args.fleet_type} if args.fleet_type else {},
    }  # fmt: skip
    if args.api == "SpotFleet":
        tpl["fleet_role"] = FLEET_ROLE
    (work / "config" / "aws_templates.json").write_text(json.dumps({"scheduler_type": "default", "templates": [tpl]}))


def _reqs(status: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = status.get("requests") or []
    return out


def _ids(req: dict[str, Any]) -> list[str]:
    return [str(m.get("machineId") or m.get("machine_id")) for m in req.get("machines") or []]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from orb.sdk.client import ORBClient

    out: dict[str, Any] = {}
    async with ORBClient(provider="aws") as sdk:
        await sdk.list_templates()
        await sdk.health_check()  # warm-up, outside the window
        per = args.machines // args.requests
        c0, t0 = calls(args.proxy), time.perf_counter()
        created = await asyncio.gather(*(sdk.request_machines("bench", per) for _ in range(args.requests)))
        ids = [c["request_id"] for c in created]
        state: dict[str, Any] = {}

        async def all_running() -> bool:
            reqs = _reqs(await sdk.get_request_status(request_ids=ids))
            state["reqs"] = reqs
            return len(reqs) == len(ids) and all(r.get("status") in DONE for r in reqs)

        ok = await poll(all_running, args.budget)
        reqs = state.get("reqs") or []
        out["running"] = sum(len(_ids(r)) for r in reqs)
        out["statuses"] = sorted({str(r.get("status")) for r in reqs})
        full = ok and out["running"] >= args.machines
        out["running_s"] = time.perf_counter() - t0 if full else None
        if ok and not full:
            out["note"] = (
                f"only {out['running']} of {args.machines} machines came up ({', '.join(out['statuses'])}): "
                + (str(reqs[0].get("message", ""))[:160] if reqs else "")
            )
        c1 = calls(args.proxy)
        out["launch_calls"] = diff(c1, c0)
        t1 = time.perf_counter()
        machine_sets = [_ids(r) for r in reqs if _ids(r)]
        rets = await asyncio.gather(*(sdk.return_machines(ms) for ms in machine_sets), return_exceptions=True)
        ret_ids = [r["request_id"] for r in rets if isinstance(r, dict) and r.get("request_id")]
        final: dict[str, Any] = {}

        async def all_returned() -> bool:
            reqs = _reqs(await sdk.get_request_status(request_ids=ret_ids))
            final["reqs"] = reqs
            return len(reqs) == len(ret_ids) and all(r.get("status") in DONE for r in reqs)

        ok = bool(ret_ids) and await poll(all_returned, args.budget)
        bad = [r for r in final.get("reqs") or [] if r.get("status") != "complete"]
        out["returned_s"] = time.perf_counter() - t1 if ok and not bad else None
        if bad:
            note = f"return {bad[0].get('status')}: {str(bad[0].get('message', ''))[:200]}"
            out["note"] = (out.get("note", "") + "; " + note).lstrip("; ")
        out["return_calls"] = diff(calls(args.proxy), c1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("--api", "--fleet-type", "--price-type", "--proxy", "--workdir"):
        ap.add_argument(name)
    ap.add_argument("--subnets", nargs="*", default=[])
    ap.add_argument("--sgs", nargs="*", default=[])
    ap.add_argument("--machines", type=int, default=200)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--budget", type=float, default=120.0)
    args = ap.parse_args()
    setup(args)
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
