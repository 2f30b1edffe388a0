"""CLI cold start against orb-py's `orb`, in one run: `--help`, `templates list --format json` (50
templates, local store) and a HostFactory `getRequestStatus` of 100 requests.

    python bench/cli_bench.py [--repeats 11] [--no-peer]

Each command is a fresh process, as a scheduler's poll is. Ours runs from this checkout's venv with the
local SQLite store and the `local` provider; the HostFactory call goes through the shipped wrapper
`scripts/hostfactory/getRequestStatus.sh -f FILE`. The peer, orb-py 1.8.5, runs from `bench/.peer/venv`
(`python3 -m venv bench/.peer/venv && bench/.peer/venv/bin/pip install orb-py==1.8.5`), its JSON store
seeded by `bench/peer_orb.py` and configured with `orb init --non-interactive`; its HostFactory call is
`orb requests status --scheduler hostfactory -f FILE`.

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
TEMPLATES, REQUESTS = 50, 100


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
            req = await sdk.create_request(f"tpl-{i % TEMPLATES:05d}", 2, wait=True)
            ids.append(req.request_id)
    return ids


def setup_ours(work: Path) -> tuple[dict[str, str], Path]:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "pluginsdk"), str(ROOT / "backends")],
                   check=True, env=clean_env({}), stdout=subprocess.DEVNULL)  # fmt: skip
    cfg = work / "pluginsdk.json"
    cfg.write_text(json.dumps({"provider": {"local": {"boot_delay": 0, "terminate_delay": 0, "seed": 1}}}))
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--no-peer", action="store_true", help="Time pluginsdk only.")
    args = ap.parse_args()
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
        for name, (ours, oenv, theirs, tenv) in cases.items():
            for label, argv, e in (("ours", ours, oenv), ("peer", theirs, tenv)):
                if argv is not None and e is not None:
                    check(f"{label} {name}", timed(argv, e)[1])  # warm-up, checked
            samples: dict[str, list[float]] = {"ours": [], "peer": []}
            for _ in range(args.repeats):
                samples["ours"].append(timed(ours, oenv)[0])
                if theirs is not None and tenv is not None:
                    samples["peer"].append(timed(theirs, tenv)[0])
            results[name] = samples
    print_table(results, args.repeats, load_before, os.getloadavg()[0])


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
    summary: dict[str, Any] = {
        n: {k: statistics.median(v) * 1e3 for k, v in s.items() if v} for n, s in results.items()
    }
    print("\n" + json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
