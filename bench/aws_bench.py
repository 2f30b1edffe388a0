"""AWS provider benchmark: 200 machines over 4 requests per provider API, ours against orb-py, one moto server.

    .venv/bin/python bench/aws_bench.py [--machines 200 --requests 4 --apis RunInstances,ASG --skip-peer]

moto's server runs on 127.0.0.1 behind the counting proxy of tests/aws/proxy.py; each system runs in its
own process (ours: this file with --worker; orb-py 1.8.5: bench/peer_orb_aws.py in bench/.peer/venv) and
sees moto through the same proxy, so "AWS calls" are counted identically for both. Per API and system:
moto is reset, a template is written, the 4 requests are submitted together and polled on the same
schedule (0.05 s, ×1.5, at most 1 s) until every machine runs; then each request's machines are returned
and polled until every return is finished. Both clients are warmed by one call before timing (botocore's
first call in a process loads its service model, ~1 s). After each run, moto is checked for instances left
running (leaks). Prints a table with ratios; `--json FILE` keeps the raw figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))

# One polling schedule and call counting for both systems (the peer's worker runs that file in its own venv).
from peer_orb_aws import calls, diff, poll  # noqa: E402

PEER_PY = ROOT / "bench" / ".peer" / "venv" / "bin" / "python"
AMI = "ami-760aaa0f"
REGION = "us-east-1"
FLEET_ROLE = "arn:aws:iam::123456789012:role/aws-ec2-spot-fleet-tagging-role"
CASES: list[tuple[str, str, str | None, str]] = [
    # label, provider_api, fleet_type, price_type
    ("RunInstances", "RunInstances", None, "ondemand"),
    ("EC2Fleet instant", "EC2Fleet", "instant", "ondemand"),
    ("EC2Fleet request", "EC2Fleet", "request", "ondemand"),
    ("EC2Fleet maintain", "EC2Fleet", "maintain", "ondemand"),
    ("SpotFleet request", "SpotFleet", "request", "spot"),
    ("SpotFleet maintain", "SpotFleet", "maintain", "spot"),
    ("ASG", "ASG", None, "ondemand"),
]
ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",  # never a real credential: moto on loopback only
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}


# -- our worker ---------------------------------------------------------------------------------------------
async def run_ours(args: argparse.Namespace) -> dict[str, Any]:
    from pluginsdk import PluginSDK

    work = Path(args.workdir)
    config = {
        "storage": {"path": str(work / "store.db")},
        "provider": {
            "type": "aws",
            "region": REGION,
            "max_machines_per_request": 1000,
            "aws": {"endpoint_url": args.proxy, "fleet_role": FLEET_ROLE},
        },
    }
    out: dict[str, Any] = {}
    async with PluginSDK(config=config) as sdk:
        extra: dict[str, Any] = {"fleet_type": args.fleet_type} if args.fleet_type else {}
        await sdk.create_template(
            template_id="bench",
            image_id=AMI,
            provider_api=args.api,
            instance_type="t3.small",
            subnet_ids=args.subnets,
            security_group_ids=args.sgs,
            price_type=args.price_type,
            **extra,
        )
        await sdk.get_provider_health()  # warm-up: one DescribeAvailabilityZones, outside the window
        per = args.machines // args.requests
        c0, t0 = calls(args.proxy), time.perf_counter()
        created = await asyncio.gather(*(sdk.create_request("bench", per) for _ in range(args.requests)))
        ids = [c.request_id for c in created]
        state: dict[str, Any] = {}

        async def all_running() -> bool:
            reqs = await asyncio.gather(*(sdk.get_request(i, long=True) for i in ids))
            state["reqs"] = reqs
            return all(sum(m.status.value == "running" for m in r.machines) >= per for r in reqs)

        ok = await poll(all_running, args.budget)
        out["running_s"] = time.perf_counter() - t0 if ok else None
        c1 = calls(args.proxy)
        out["launch_calls"] = diff(c1, c0)
        out["running"] = sum(sum(m.status.value == "running" for m in r.machines) for r in state["reqs"])
        t1 = time.perf_counter()
        rets = await asyncio.gather(
            *(sdk.create_return_request(machine_ids=[m.machine_id for m in r.machines]) for r in state["reqs"])
        )
        ret_ids = [r.request_id for r in rets if r.request_id]

        async def all_returned() -> bool:
            reqs = await asyncio.gather(*(sdk.get_request(i) for i in ret_ids))
            return all(r.status.terminal for r in reqs)

        ok = await poll(all_returned, args.budget)
        out["returned_s"] = time.perf_counter() - t1 if ok else None
        out["return_calls"] = diff(calls(args.proxy), c1)
    return out


# -- orchestration ------------------------------------------------------------------------------------------
def reset(moto: str) -> None:
    req = urllib.request.Request(f"{moto}/moto-api/reset", method="POST")
    urllib.request.urlopen(req, timeout=10).close()  # loopback only


async def network(moto: str) -> tuple[list[str], list[str]]:
    from aiobotocore.session import get_session

    async with get_session().create_client("ec2", region_name=REGION, endpoint_url=moto) as ec2:
        subnets = sorted(s["SubnetId"] for s in (await ec2.describe_subnets())["Subnets"])[:1]
        sgs = [g["GroupId"] for g in (await ec2.describe_security_groups())["SecurityGroups"]][:1]
    return subnets, sgs


async def leftovers(moto: str) -> int:
    """Instances moto still holds that are not terminated."""
    from aiobotocore.session import get_session

    async with get_session().create_client("ec2", region_name=REGION, endpoint_url=moto) as ec2:
        n = 0
        async for page in ec2.get_paginator("describe_instances").paginate():
            n += sum(i["State"]["Name"] != "terminated" for r in page["Reservations"] for i in r["Instances"])
        return n


def start_moto() -> tuple[Any, str]:
    """A moto server on 127.0.0.1 (a free port) in this process's bench AWS environment: the server, its URL."""
    os.environ.update(ENV)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def worker(cmd: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"worker timed out after {timeout:.0f}s"}
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    if res.returncode != 0 or not lines:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {res.returncode}: {' | '.join(tail)[:300]}"}
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def ratio(peer: float | None, ours: float | None) -> str:
    return "—" if not peer or not ours else f"{peer / ours:.1f}×"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--api")
    ap.add_argument("--fleet-type")
    ap.add_argument("--price-type", default="ondemand")
    ap.add_argument("--proxy")
    ap.add_argument("--workdir")
    ap.add_argument("--subnets", nargs="*", default=[])
    ap.add_argument("--sgs", nargs="*", default=[])
    ap.add_argument("--machines", type=int, default=200)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--budget", type=float, default=240.0)
    ap.add_argument("--apis", help="comma-separated labels of CASES to run (default: all)")
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--json", help="also write the raw figures here")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(run_ours(args))))
        return

    from tests.aws.proxy import AwsProxy

    server, moto = start_moto()
    proxy = AwsProxy(moto).start()
    peer = PEER_PY.exists() and not args.skip_peer
    if not peer and not args.skip_peer:
        print(f"peer venv missing ({PEER_PY}); running ours only", file=sys.stderr)
    wanted = set(args.apis.split(",")) if args.apis else None
    rows: list[dict[str, Any]] = []
    try:
        for label, api, fleet_type, price in CASES:
            if wanted and label not in wanted:
                continue
            row: dict[str, Any] = {"api": label}
            for system in ("ours", "orb") if peer else ("ours",):
                reset(moto)
                proxy.reset()
                subnets, sgs = asyncio.run(network(moto))
                with tempfile.TemporaryDirectory(prefix=f"awsbench-{system}-") as tmp:
                    common = [
                        "--api", api, "--price-type", price, "--proxy", proxy.url, "--workdir", tmp,
                        "--machines", str(args.machines), "--requests", str(args.requests),
                        "--budget", str(args.budget), "--subnets", *subnets, "--sgs", *sgs,
                        *(["--fleet-type", fleet_type] if fleet_type else []),
                    ]  # fmt: skip
                    env = {**os.environ, "PYTHONPATH": str(ROOT)}
                    if system == "ours":
                        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *common]
                    else:
                        cmd = [str(PEER_PY), str(ROOT / "bench" / "peer_orb_aws.py"), *common]
                        env.pop("PYTHONPATH")
                    result = worker(cmd, env, timeout=2 * args.budget + 120)
                result["leaked"] = asyncio.run(leftovers(moto))
                row[system] = result
                print(f"{label:20} {system:4} {json.dumps(result)}", file=sys.stderr)
            rows.append(row)
    finally:
        proxy.stop()
        server.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    print_table(rows, args)


def print_table(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\n{args.machines} machines over {args.requests} requests per API; wall seconds, AWS API calls via the proxy\n"
    )
    print(
        "| provider API | running: ours (s) | orb (s) | orb/ours | returned: ours (s) | orb (s) | orb/ours "
        "| calls ours | calls orb | orb/ours | running ours / orb | left running ours / orb |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        o, p = row["ours"], row.get("orb", {})
        oc = (
            sum(o.get("launch_calls", {}).values()) + sum(o.get("return_calls", {}).values())
            if "error" not in o
            else None
        )
        pc = (
            sum(p.get("launch_calls", {}).values()) + sum(p.get("return_calls", {}).values())
            if p and "error" not in p
            else None
        )
        print(
            f"| {row['api']} | {fmt(o.get('running_s'))} | {fmt(p.get('running_s'))} | {ratio(p.get('running_s'), o.get('running_s'))} "
            f"| {fmt(o.get('returned_s'))} | {fmt(p.get('returned_s'))} | {ratio(p.get('returned_s'), o.get('returned_s'))} "
            f"| {oc if oc is not None else '—'} | {pc if pc is not None else '—'} | {ratio(pc, oc)} "
            f"| {o.get('running', '—')} / {p.get('running', '—')} | {o.get('leaked', '—')} / {p.get('leaked', '—')} |"
        )
    for row in rows:
        for system in ("ours", "orb"):
            r = row.get(system) or {}
            if r.get("error") or r.get("note"):
                print(f"- {row['api']} ({system}): {r.get('error') or r.get('note')}")


if __name__ == "__main__":
    main()
