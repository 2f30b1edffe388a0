"""CLI cold start against orb-py's `orb`, in one run: `--help`, `templates list --format json` (50
templates, local store), a HostFactory `getRequestStatus` of 1,000 requests, and a HostFactory
`requestMachines` of 500 machines (RunInstances, both programs against one moto server on 127.0.0.1).

    python bench/cli_bench.py [--repeats 11] [--launch-repeats 3] [--requests 1000] [--machines 500] [--no-peer]

Each command is a fresh process, as a scheduler's poll is. Ours runs from this checkout's venv with the
local SQLite store and the `local` provider; the HostFactory call goes through the shipped wrapper
`scripts/hostfactory/getRequestStatus.sh -f FILE`. The peer, orb-py 1.8.5, runs from `bench/.peer/venv`
(`python3 -m venv bench/.peer/venv && bench/.peer/venv/bin/pip install orb-py==1.8.5`), its JSON store
seeded by `bench/peer_orb.py` and configured with `orb init --non-interactive`; its HostFactory call is
`orb requests status --scheduler hostfactory -f FILE`.

The requestMachines case needs moto (`pip install 'moto[server]'`, in the dev extras): ours runs the
shipped `scripts/hostfactory/requestMachines.sh -f FILE` with the `aws` provider pointed at moto; the peer
runs `orb machines request --scheduler hostfactory -f FILE` with its config and template written by
`bench/peer_orb_aws.py` and boto3 pointed at moto (AWS_ENDPOINT_URL). moto is reset before every run
(outside the timing), so each run launches 500 instances into an empty account.

Both sides run with bytecode caches, as an installed package has them (pip compiles on install; our
editable checkout is compiled here first, and PYTHONDONTWRITEBYTECODE is dropped from the children's
environment). Runs alternate between the two programs so background load hits both alike; the table
gives the median and the minimum wall time of the repeats after one warm-up run that is also checked
for correctness (exit 0, JSON parsed, 50 templates, 100 requests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEER_PY = ROOT / "bench" / ".peer" / "venv" / "bin" / "python"
PEER_ORB = PEER_PY.with_name("orb")
OURS = Path(sys.executable).with_name("pluginsdk")
TEMPLATES, REQUESTS, MACHINES = 50, 1000, 500


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLUGIN_", "ORB_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return {**env, **extra}


async def seed_ours(env: dict[str, str]) -> list[str]:
    from pluginsdk import PluginSDK

    os.environ.update(env)
    async with PluginSDK() as sdk:
        for i in range(TEMPLATES):
            await sdk.create_template(template_id=f"tpl-{i:05d}", image_id="ami-12345678", instance_type="t3.small")
        ids = []
        for i in range(REQUESTS):
            req = await sdk.create_request(f"tpl-{i % TEMPLATES:05d}", 2)
            ids.append(req.request_id)
    return ids


def setup_ours(work: Path) -> tuple[dict[str, str], Path]:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "pluginsdk"), str(ROOT / "backends")],
                   check=True, env=clean_env({}), stdout=subprocess.DEVNULL)  # fmt: skip
    cfg = work / "pluginsdk.json"
    cfg.write_text(
        json.dumps({"provider": {"local": {"boot_delay": 0, "terminate_delay": 0, "seed": 1, "capacity": 1000000}}})
    )
    env = clean_env({
        "PLUGIN_STORAGE_PATH": str(work / "store.db"), "PLUGIN_CONFIG": str(cfg), "PLUGINSDK_BIN": str(OURS),
    })  # fmt: skip
    ids = asyncio.run(seed_ours(env))
    infile = work / "status.json"
    infile.write_text(json.dumps({"requests": [{"requestId": i} for i in ids]}))
    return env, infile


def setup_peer(work: Path) -> tuple[dict[str, str], Path]:
    sys.path.insert(0, str(ROOT / "bench"))
    import peer_orb

    env = clean_env(peer_orb.env_for(work))
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import peer_orb, pathlib; " \
           f"print(' '.join(peer_orb.seed(pathlib.Path({str(work)!r}), {TEMPLATES}, {REQUESTS})))"  # fmt: skip
    ids = subprocess.run([str(PEER_PY), "-c", code], env=env, check=True, capture_output=True, text=True).stdout.split()
    subprocess.run([str(PEER_ORB), "init", "--non-interactive", "--config-dir", str(work / "config"),
                    "--aws-region", "us-east-1"], env=env, check=True, capture_output=True)  # fmt: skip
    infile = work / "status.json"
    infile.write_text(json.dumps({"requests": [{"requestId": i} for i in ids]}))
    return env, infile


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t = time.perf_counter()
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=300)
    return time.perf_counter() - t, res


def check(name: str, res: subprocess.CompletedProcess[str]) -> None:
    if res.returncode != 0:
        raise SystemExit(f"{name}: exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    if "help" in name:
        return
    data = json.loads(res.stdout)
    count = len(data["templates"] if "templates" in name else data["requests"])
    want = TEMPLATES if "templates" in name else REQUESTS
    if count != want:
        raise SystemExit(f"{name}: {count} items, expected {want}")


def main() -> None:
    global REQUESTS, MACHINES
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--launch-repeats", type=int, default=3, help="Repeats of the requestMachines case.")
    ap.add_argument("--requests", type=int, default=REQUESTS, help="Requests in the getRequestStatus case.")
    ap.add_argument("--machines", type=int, default=MACHINES, help="Machines in the requestMachines case.")
    ap.add_argument("--no-peer", action="store_true", help="Time pluginsdk only.")
    ap.add_argument("--launch-only", action="store_true", help="Only the requestMachines case.")
    args = ap.parse_args()
    REQUESTS, MACHINES = args.requests, args.machines
    peer = not args.no_peer and PEER_ORB.exists()
    if not args.no_peer and not peer:
        print(f"(peer not installed at {PEER_ORB}; timing pluginsdk only)", file=sys.stderr)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        work = Path(tmp)
        (work / "ours").mkdir()
        env, infile = setup_ours(work / "ours")
        hf_script = str(ROOT / "scripts" / "hostfactory" / "getRequestStatus.sh")
        cases: dict[str, tuple[list[str], dict[str, str], list[str] | None, dict[str, str] | None]] = {}
        penv: dict[str, str] = {}
        pin = Path()
        if peer:
            penv, pin = setup_peer(work / "peer")
        orb = str(PEER_ORB)
        cases["--help"] = ([str(OURS), "--help"], env, [orb, "--help"] if peer else None, penv)
        cases[f"templates list --format json ({TEMPLATES} templates)"] = (
            [str(OURS), "templates", "list", "--format", "json"], env,
            [orb, "templates", "list", "--format", "json"] if peer else None, penv,
        )  # fmt: skip
        cases[f"HostFactory getRequestStatus ({REQUESTS} requests)"] = (
            ["/bin/sh", hf_script, "-f", str(infile)], env,
            [orb, "requests", "status", "--scheduler", "hostfactory", "-f", str(pin)] if peer else None, penv,
        )  # fmt: skip
        results: dict[str, dict[str, list[float]]] = {}
        for name, (ours, oenv, theirs, tenv) in ({} if args.launch_only else cases).items():
            for label, argv, e in (("ours", ours, oenv), ("peer", theirs, tenv)):
                if argv is not None and e is not None:
                    check(f"{label} {name}", timed(argv, e)[1])  # warm-up, checked
            samples: dict[str, list[float]] = {"ours": [], "peer": []}
            for _ in range(args.repeats):
                samples["ours"].append(timed(ours, oenv)[0])
                if theirs is not None and tenv is not None:
                    samples["peer"].append(timed(theirs, tenv)[0])
            results[name] = samples
        name = f"HostFactory requestMachines ({MACHINES} machines, moto)"
        results[name] = request_machines(work, args.launch_repeats, peer)
    print_table(results, args.repeats, load_before, os.getloadavg()[0])


def request_machines(work: Path, repeats: int, peer: bool) -> dict[str, list[float]]:
    """Wall time of one requestMachines process launching MACHINES instances, per program, on one moto."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from aws_bench import leftovers, network, reset, start_moto

    server, moto = start_moto()
    samples: dict[str, list[float]] = {"ours": [], "peer": [], "floor": []}
    payload = {"template": {"templateId": "bench", "machineCount": MACHINES}}
    launchers = {"ours": launch_ours, "peer": launch_peer, "floor": launch_floor}
    try:
        for attempt in range(repeats + 1):  # the first run of each is the checked warm-up
            for label in ("ours", "floor", "peer") if peer else ("ours", "floor"):
                reset(moto)
                subnets, sgs = asyncio.run(network(moto))
                side = work / f"launch-{label}-{attempt}"
                side.mkdir()
                infile = side / "in.json"
                infile.write_text(json.dumps(payload))
                argv, env = launchers[label](side, moto, subnets, sgs, infile)
                elapsed, res = timed(argv, env)
                if res.returncode != 0 or not json.loads(res.stdout or "{}").get("requestId"):
                    raise SystemExit(
                        f"{label} requestMachines: exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
                    )
                launched = asyncio.run(leftovers(moto))  # instances moto holds, not terminated
                if launched != MACHINES:
                    print(
                        f"note: {label} requestMachines left {launched} instances in moto, not {MACHINES}",
                        file=sys.stderr,
                    )
                if attempt:
                    samples[label].append(elapsed)
    finally:
        server.stop()
    return samples


def launch_ours(
    side: Path, moto: str, subnets: list[str], sgs: list[str], infile: Path
) -> tuple[list[str], dict[str, str]]:
    (side / "templates").mkdir()
    (side / "templates" / "bench.json").write_text(json.dumps({"templates": [{
        "templateId": "bench", "maxNumber": MACHINES, "imageId": "ami-760aaa0f", "vmType": "t3.small",
        "providerApi": "RunInstances", "subnetId": ",".join(subnets), "securityGroupIds": sgs,
    }]}))  # fmt: skip
    cfg = side / "pluginsdk.json"
    cfg.write_text(json.dumps({"provider": {"type": "aws", "region": "us-east-1", "max_machines_per_request": MACHINES,
                                            "aws": {"endpoint_url": moto}}}))  # fmt: skip
    env = clean_env({**ENV_AWS, "PLUGIN_STORAGE_PATH": str(side / "store.db"), "PLUGIN_CONFIG": str(cfg),
                     "PLUGIN_TEMPLATES_DIR": str(side / "templates"), "PLUGINSDK_BIN": str(OURS)})  # fmt: skip
    return ["/bin/sh", str(ROOT / "scripts" / "hostfactory" / "requestMachines.sh"), "-f", str(infile)], env


_FLOOR = """
import json, sys
import boto3
moto, subnets, sgs, machines = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
ec2 = boto3.client("ec2", endpoint_url=moto, region_name="us-east-1")
base, extra = divmod(machines, len(subnets))
for i, subnet in enumerate(subnets):
    n = base + (i < extra)
    tags = [{"Key": "bench", "Value": "floor"}]
    ec2.run_instances(ImageId="ami-760aaa0f", InstanceType="t3.small", MinCount=n, MaxCount=n, SubnetId=subnet,
                      SecurityGroupIds=sgs, ClientToken=f"floor-{i}",
                      TagSpecifications=[{"ResourceType": "instance", "Tags": tags},
                                         {"ResourceType": "volume", "Tags": tags}])
print(json.dumps({"requestId": "floor"}))
"""
"""moto alone: a boto3 process making the RunInstances calls ours makes (one per subnet share, MinCount =
MaxCount, the same image, type, groups and tag specifications), nothing else — the floor a requestMachines
cannot go below."""


def launch_floor(
    side: Path, moto: str, subnets: list[str], sgs: list[str], infile: Path
) -> tuple[list[str], dict[str, str]]:
    del side, infile
    return [sys.executable, "-c", _FLOOR, moto, json.dumps(subnets), json.dumps(sgs), str(MACHINES)], clean_env(ENV_AWS)


def launch_peer(
    side: Path, moto: str, subnets: list[str], sgs: list[str], infile: Path
) -> tuple[list[str], dict[str, str]]:
    code = (
        f"import sys, argparse; sys.path.insert(0, {str(ROOT / 'bench')!r}); import peer_orb_aws; "
        f"peer_orb_aws.setup(argparse.Namespace(workdir={str(side)!r}, proxy={moto!r}, machines={MACHINES}, "
        f"subnets={subnets!r}, sgs={sgs!r}, price_type='ondemand', api='RunInstances', fleet_type=None))"
    )
    env = clean_env({**ENV_AWS, "AWS_ENDPOINT_URL": moto, "ORB_ROOT_DIR": str(side), "ORB_WORK_DIR": str(side / "work"),
                     "ORB_CONFIG_DIR": str(side / "config"), "ORB_LOG_DIR": str(side / "logs")})  # fmt: skip
    subprocess.run([str(PEER_PY), "-c", code], env=env, check=True, capture_output=True)
    return [str(PEER_ORB), "machines", "request", "--scheduler", "hostfactory", "-f", str(infile)], env


ENV_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",  # never a real credential: moto on loopback only
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


TARGETS = {"--help": "≤ 150 ms", "templates": "≤ 350 ms and ≥ 3× faster"}


def print_table(results: dict[str, dict[str, list[float]]], repeats: int, load0: float, load1: float) -> None:
    def ms(v: list[float]) -> str:
        return f"{statistics.median(v) * 1e3:,.0f} ({min(v) * 1e3:,.0f})" if v else "—"

    print(f"\n{repeats} runs each, median (min) wall ms; load average {load0:.1f} before, {load1:.1f} after\n")
    print("| command | pluginsdk | orb-py 1.8.5 | orb / pluginsdk | target |")
    print("|---|---:|---:|---:|---|")
    for name, s in results.items():
        ratio = f"{statistics.median(s['peer']) / statistics.median(s['ours']):.1f}×" if s["peer"] else "—"
        target = next((t for k, t in TARGETS.items() if name.startswith(k)), "—")
        print(f"| `{name}` | {ms(s['ours'])} | {ms(s['peer'])} | {ratio} | {target} |")
        if s.get("floor"):
            over = statistics.median(s["ours"]) / statistics.median(s["floor"])
            print(f"| … moto alone (boto3, the same RunInstances calls) | {ms(s['floor'])} | | "
                  f"pluginsdk / moto alone {over:.2f}× | ≤ 1.5× |")  # fmt: skip
    summary: dict[str, Any] = {
        n: {k: statistics.median(v) * 1e3 for k, v in s.items() if v} for n, s in results.items()
    }
    print("\n" + json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
