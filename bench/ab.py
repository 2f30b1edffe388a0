"""A/B against the previous release, in one run: the hot paths of this checkout and of the last release tag.

    python bench/ab.py [--against REF] [--repeats 7] [--seconds 3] [--rounds 2] [--constraints 1000]
                       [--budget 170] [--only cli|rest|pdp ...] [--peer]

The previous release is the newest `v*` tag reachable from HEAD that is not HEAD itself (releases are tagged:
docs/benchmarks.md, "Releases and the A/B"); in a clone without tags, the commit 5d918fc (0.1.0) if the
history has it; else the run says so and stops (exit 0: it never gates). That tree is written to a temporary
directory with `git archive`, and both trees run with this interpreter and its installed dependencies, each
with its own code first on the path and its bytecode compiled (as an installed package has it).

Measured, alternating A (previous) and B (this checkout) so background load hits both alike:
- cold start: the console script's `--help`; `templates list --format json` on 50 templates; a HostFactory
  getRequestStatus of 1,000 requests through the shipped `scripts/hostfactory/getRequestStatus.sh` (each a
  fresh process on a SQLite store seeded by that tree's own SDK; median wall ms of `--repeats`, and the median
  CPU ms of the same runs, the steadier figure on a shared machine);
- the authenticated REST read (`GET /api/v1/requests/{id}` with an API key) under `wrk` (64 connections,
  `--seconds` each, `--rounds` rounds per side), each tree's `serve()` with one worker, and a bare ASGI app
  (one fixed JSON answer) on the same uvicorn stack as the reference the read is held to (≥ 25 %);
- the decision point: the SDK's in-process subject check, p50 of one call (warm), on `bench/policy_bench.py`'s
  generated policy of `--constraints` constraints and 200 roles, 1,000 questions and the users they name
  loaded into a fresh store.

Prints one table (medians and the change now against previous; for throughput, higher is better). `--peer` adds
orb-py 1.8.5 where `bench/.peer/venv` has it (cold start, REST read) and cedarpy (the subject check). `.ci/run` runs it
after the tests and never fails on it; `--budget` (170 s) leaves out a part that would not fit in what is left
of it (on a loaded machine), so the run stays under 3 minutes and still prints what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
FALLBACK = "5d918fc"
"""0.1.0, the release before tags were kept (the A side when a clone has no tags)."""
TEMPLATES, REQUESTS, SERVER_REQUESTS = 50, 1000, 100
PEER = BENCH / ".peer" / "venv" / "bin" / "orb"
"""orb-py 1.8.5, the peer (`pip install 'orb-py[api]==1.8.5'` into bench/.peer/venv); used with `--peer` where installed."""
PEER_REPEATS = 3
CONSOLE = Path(sys.executable).with_name("pluginsdk")
CLI_CONFIG = "provider:\n  local:\n    boot_delay: 0\n    terminate_delay: 0\n    seed: 1\n    capacity: 1000000\n"


# -- the two trees ---------------------------------------------------------------------------------
def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def previous_release() -> str | None:
    """The newest `v*` tag merged into HEAD that does not name HEAD itself; else 5d918fc if present; else None."""
    try:
        head = git("rev-parse", "HEAD")
        for tag in git("tag", "--list", "v*", "--merged", "HEAD", "--sort=-v:refname").split():
            if git("rev-parse", f"{tag}^{{commit}}") != head:
                return tag
        git("cat-file", "-e", f"{FALLBACK}^{{commit}}")
        return FALLBACK
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def extract(ref: str, into: Path) -> Path:
    """The tree of `ref`, written under `into` with `git archive`."""
    into.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", ref], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {ref} failed")
    return into


def tree_env(tree: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process running `tree`'s code: no PLUGIN_* of the caller, bytecode caches on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLUGIN_", "PYTHONDONTWRITEBYTECODE"))}
    return {**env, "PYTHONPATH": str(tree), **(extra or {})}


def worker(tree: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 600) -> Any:
    """Run this script's `--worker ARGS` with `tree`'s code first on the path; its JSON answer."""
    res = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", *args],
        env=env or tree_env(tree), capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if res.returncode != 0:
        raise SystemExit(f"worker {args[0]} ({tree}): exit {res.returncode}\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# -- workers (run with one tree's code) ---------------------------------------------------------------
def seed_cli(work: Path) -> dict[str, Any]:
    import asyncio

    from pluginsdk import PluginSDK

    async def go() -> list[str]:
        async with PluginSDK() as sdk:
            for i in range(TEMPLATES):
                await sdk.create_template(template_id=f"tpl-{i:05d}", image_id="ami-12345678", instance_type="t3.small")
            return [(await sdk.create_request(f"tpl-{i % TEMPLATES:05d}", 2)).request_id for i in range(REQUESTS)]

    ids = asyncio.run(go())
    (work / "status.json").write_text(json.dumps({"requests": [{"requestId": i} for i in ids]}))
    return {"requests": len(ids)}


def seed_server(work: Path) -> dict[str, Any]:
    import asyncio

    from pluginsdk import PluginSDK

    config = server_config(work)

    async def go() -> dict[str, Any]:
        async with PluginSDK(config=config) as sdk:
            await sdk.create_template(template_id="web", image_id="ami-1")
            ids = [(await sdk.create_request("web", 1, wait=True)).id for _ in range(SERVER_REQUESTS)]
            key = await sdk.create_api_key(api_key_name="bench", description="benchmark key", user_id="administrator")
            return {"rid": ids[len(ids) // 2], "key": str(key.api_key)}

    return asyncio.run(go())


def server_config(work: Path) -> dict[str, Any]:
    return {"storage": {"path": str(work / "server.db")}, "provider": {"local": {"boot_delay": 0.0}}}


def serve_bare(port: int) -> None:
    """A bare ASGI app (one fixed JSON answer) on the server stack `serve()` uses: the read's reference."""
    import uvicorn

    from pluginsdk.server import http_protocol

    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    config = uvicorn.Config(app, http=http_protocol(), loop="asyncio", host="127.0.0.1", port=port,
                            access_log=False, lifespan="off", ws="none", log_level="warning")  # fmt: skip
    uvicorn.Server(config).run()


def pdp(work: Path, constraints: int, calls: int, with_peer: bool) -> dict[str, Any]:
    """p50 of one in-process subject check (warm), on the generated policy loaded into a fresh store."""
    import asyncio
    import gc

    import backends  # noqa: F401 - this tree's packages first, before bench/ puts the checkout on the path
    import pluginsdk
    from pluginsdk import PluginSDK

    sys.path.insert(0, str(BENCH))
    from pdp_bench import _load
    from policy_bench import generate

    assert Path(pluginsdk.__file__).is_relative_to(os.environ["PYTHONPATH"])
    g = generate(constraints, calls)
    asked = {p.user_id for p, _, _, _ in g.decisions}
    g.principals = [p for p in g.principals if p.user_id in asked]  # only the subjects asked about are loaded
    answers: list[bool] = []

    async def go() -> list[float]:
        async with PluginSDK(config={"storage": {"path": str(work / "pdp.db")}, "provider": {"type": "local"}}) as sdk:
            await _load(sdk, g)
            for p, t, a, m in g.decisions:  # each subject's bucket built
                await sdk.check_access(t, m, user_id=p.user_id, mfa=p.mfa, attributes=a)
            gc.collect()
            lat = []
            for p, t, a, m in g.decisions:
                t0 = time.perf_counter_ns()
                got = await sdk.check_access(t, m, user_id=p.user_id, mfa=p.mfa, attributes=a)
                lat.append((time.perf_counter_ns() - t0) / 1000)
                answers.append(got.allowed)
            return lat

    out: dict[str, Any] = {"p50_us": statistics.median(asyncio.run(go()))}
    if with_peer:  # cedarpy, one `is_authorized` per decision on the same policy and questions (policy_bench)
        from policy_bench import Cedar, measure

        expected = answers
        calls = Cedar(g, g.decisions).prepare(g.decisions)
        out["peer_p50_us"] = measure("cedarpy", constraints, calls, 10.0, expected).p50_us
    return out


def run_worker(args: list[str]) -> None:
    kind, rest = args[0], args[1:]
    if kind == "bare":
        serve_bare(int(rest[0]))
        return
    out = {
        "seed-cli": lambda: seed_cli(Path(rest[0])),
        "seed-server": lambda: seed_server(Path(rest[0])),
        "pdp": lambda: pdp(Path(rest[0]), int(rest[1]), int(rest[2]), rest[3] == "peer"),
    }[kind]()
    print(json.dumps(out))


# -- the measurements --------------------------------------------------------------------------------
def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU is user + system of the finished child as the kernel accounts it,
    which a loaded machine disturbs far less than the wall time."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    res = subprocess.run(argv, env=env, capture_output=True, check=False, timeout=900)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {res.returncode}\n{res.stderr[-2000:].decode(errors='replace')}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cold_start(trees: dict[str, Path], work: Path, repeats: int, peer: bool) -> dict[str, dict[str, list[float]]]:
    cases: dict[str, dict[str, tuple[list[str], dict[str, str]]]] = {
        "`pluginsdk --help` cold start": {},
        f"`templates list --format json`, {TEMPLATES} templates": {},
        f"HostFactory getRequestStatus, {REQUESTS:,} requests": {},
    }
    help_case, list_case, hf_case = cases
    for side, tree in trees.items():
        side_dir = work / f"cli-{side}"
        side_dir.mkdir()
        (side_dir / "plugin.yaml").write_text(CLI_CONFIG)
        env = tree_env(tree, {"PLUGIN_STORAGE_PATH": str(side_dir / "store.db"),
                              "PLUGIN_CONFIG": str(side_dir / "plugin.yaml"), "PLUGINSDK_BIN": str(CONSOLE),
                              "XDG_DATA_HOME": str(side_dir / "xdg")})  # fmt: skip
        worker(tree, "seed-cli", str(side_dir), env=env)
        script = tree / "scripts" / "hostfactory" / "getRequestStatus.sh"
        cases[help_case][side] = ([str(CONSOLE), "--help"], env)
        cases[list_case][side] = ([str(CONSOLE), "templates", "list", "--format", "json"], env)
        cases[hf_case][side] = (["/bin/sh", str(script), "-f", str(side_dir / "status.json")], env)
    if peer:
        sys.path.insert(0, str(BENCH))
        from cli_bench import PEER_ORB, setup_peer

        penv, pin = setup_peer(work / "cli-peer")
        orb = str(PEER_ORB)
        cases[help_case]["peer"] = ([orb, "--help"], penv)
        cases[list_case]["peer"] = ([orb, "templates", "list", "--format", "json"], penv)
        cases[hf_case]["peer"] = ([orb, "requests", "status", "--scheduler", "hostfactory", "-f", str(pin)], penv)
    out: dict[str, dict[str, list[float]]] = {}
    for name, sides in cases.items():
        for argv, env in sides.values():
            timed(argv, env)  # warm-up: checked, not counted
        out[name] = {side: [] for side in sides}
        out[f"{name}, CPU"] = {side: [] for side in sides}
        for n in range(repeats):
            for side, (argv, env) in sides.items():
                if side != "peer" or n < PEER_REPEATS:  # the peer is slow: fewer runs
                    wall, cpu = timed(argv, env)
                    out[name][side].append(wall * 1000)
                    out[f"{name}, CPU"][side].append(cpu * 1000)
    return out


def rest_read(
    trees: dict[str, Path], work: Path, seconds: int, rounds: int, peer: bool
) -> dict[str, dict[str, list[float]]]:
    """req/s and server CPU µs per request of each tree's read, and of the bare app on the same stack."""
    sys.path.insert(0, str(BENCH))
    from server_bench import cpu_seconds, free_port, serve_checkout, stop, wait_http, wrk

    del cpu_seconds  # wrk() reads it
    servers: dict[str, tuple[subprocess.Popen[bytes], str, dict[str, str]]] = {}
    try:
        for side, tree in trees.items():
            side_dir = work / f"rest-{side}"
            side_dir.mkdir()
            seeded = worker(tree, "seed-server", str(side_dir))
            proc, url = serve_checkout(tree, server_config(side_dir), side_dir / "server.log")
            servers[side] = (proc, f"{url}/api/v1/requests/{seeded['rid']}", {"Authorization": seeded["key"]})
        port = free_port()
        bare = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", "bare", str(port)],
            env=tree_env(trees["now"]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        servers["bare"] = (bare, f"http://127.0.0.1:{port}/", {})
        wait_http(servers["bare"][1])
        if peer:
            from server_bench import start_peer

            try:
                started = start_peer(argparse.Namespace(requests=SERVER_REQUESTS), work)
            except (RuntimeError, subprocess.CalledProcessError) as exc:
                print(f"(orb-py's server did not start: {exc}; no peer for the REST read)", file=sys.stderr)
                started = None
            if started is not None:  # orb's API runs without auth by default: the header is sent anyway
                servers["peer"] = (started[0], f"{started[1]}/api/v1/requests/{started[2]}", {"Authorization": "x"})
        for side, (proc, url, headers) in servers.items():  # warm-up, and a read that answers 200
            run = wrk(url, headers, 1, 64, proc.pid)
            if run["non2xx"] and side != "peer":
                raise SystemExit(f"{url}: {run['non2xx']:.0f} answers not 2xx")
        rps: dict[str, list[float]] = {side: [] for side in servers}
        cpu: dict[str, list[float]] = {side: [] for side in servers}
        non2xx: dict[str, list[float]] = {side: [] for side in servers}
        for _ in range(rounds):
            for side, (proc, url, headers) in servers.items():
                run = wrk(url, headers, seconds, 64, proc.pid)
                rps[side].append(run["rps"])
                cpu[side].append(run["cpu_us"])
                non2xx[side].append(run["non2xx"])
    finally:
        for proc, _, _ in servers.values():
            stop(proc)
    return {"rps": rps, "cpu": cpu, "non2xx": non2xx}


def decision_point(
    trees: dict[str, Path], work: Path, constraints: int, rounds: int, peer: bool
) -> dict[str, list[float]]:
    """p50 of one subject check per tree and round; with `peer`, cedarpy's p50 (once, beside this checkout's)."""
    out: dict[str, list[float]] = {side: [] for side in trees}
    out["peer"] = []
    for n in range(rounds):
        for side, tree in trees.items():
            run_dir = work / f"pdp-{side}-{n}"
            run_dir.mkdir()
            with_peer = peer and side == "now" and n == 0
            got = worker(tree, "pdp", str(run_dir), str(constraints), "1000", "peer" if with_peer else "-")
            out[side].append(got["p50_us"])
            if with_peer:
                out["peer"].append(got["peer_p50_us"])
    return out


# -- the table ---------------------------------------------------------------------------------------
def _num(v: float) -> str:
    return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def row(
    name: str, sides: dict[str, list[float]], unit: str, goal: str, *, higher_better: bool = False, peer: bool = False
) -> str:
    """One line: previous, now, the change, the peer and now's advantage over it (where measured), the goal."""
    ma, mb = statistics.median(sides["previous"]), statistics.median(sides["now"])
    change = (mb / ma - 1) * 100
    better = change > 0 if higher_better else change < 0
    word = "better" if better else "worse" if abs(change) >= 0.5 else "same"
    cells = [name, f"{_num(ma)} {unit}", f"{_num(mb)} {unit}", f"{change:+.0f} % ({word})"]
    if peer:
        mp = statistics.median(sides["peer"]) if sides.get("peer") else None
        advantage = None if mp is None else (mb / mp if higher_better else mp / mb)
        cells += ["—" if mp is None else f"{_num(mp)} {unit}", "—" if advantage is None else f"{advantage:,.1f}×"]
    return "| " + " | ".join([*cells, goal]) + " |"


GOALS = {"--help": "≤ 55 ms", "check": "≤ 15 µs p50", "read": "≥ 25 % of the bare app"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", help="The A side: a tag or commit (default: the previous release).")
    ap.add_argument("--repeats", type=int, default=7, help="Runs of each cold-start case per side.")
    ap.add_argument("--seconds", type=int, default=3, help="Seconds of each wrk run.")
    ap.add_argument("--rounds", type=int, default=2, help="wrk runs and decision-point runs per side.")
    ap.add_argument("--constraints", type=int, default=1000, help="Constraints of the decision point's policy.")
    ap.add_argument("--budget", type=float, default=170, help="Seconds; a part that would not fit is left out.")
    ap.add_argument("--peer", action="store_true", help="Also orb-py (cold start, REST read) and cedarpy.")
    ap.add_argument("--only", choices=("cli", "rest", "pdp"), action="append", help="Only these parts.")
    ap.add_argument("--worker", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        run_worker(args.worker)
        return
    ref = args.against or previous_release()
    if ref is None:
        print("A/B skipped: no release tag (v*) and no commit 5d918fc in this clone's history (a shallow clone?).")
        return
    parts = set(args.only or ("cli", "rest", "pdp"))
    peer = args.peer and PEER.exists()
    if args.peer and not peer:
        print(f"(the peer is not installed at {PEER}: no peer column)")
    if "rest" in parts and not shutil.which("wrk"):
        print("(wrk not installed — apt-get install wrk — the REST read is left out)")
        parts.discard("rest")
    start, load0 = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="pluginsdk-ab-") as tmp:
        work = Path(tmp)
        trees = {"previous": extract(ref, work / "previous"), "now": ROOT}
        for tree in trees.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "pluginsdk"), str(tree / "backends")],
                           env=tree_env(tree), stdout=subprocess.DEVNULL, check=True)  # fmt: skip

        def fits(part: str, reserve: float) -> bool:
            """Whether `part` was asked for and `reserve` seconds (its usual length on a quiet machine, doubled)
            are left of `--budget`; else it is left out, and the table says so."""
            if part not in parts:
                return False
            if time.monotonic() - start + reserve <= args.budget:
                return True
            skipped.append(part)
            return False

        skipped: list[str] = []
        cli = cold_start(trees, work, args.repeats, peer) if fits("cli", 60) else {}
        rest = rest_read(trees, work, args.seconds, args.rounds, peer) if fits("rest", 40) else {}
        check = decision_point(trees, work, args.constraints, args.rounds, peer) if fits("pdp", 60) else {}
    head = git("rev-parse", "--short", "HEAD")
    print(f"\nA/B: previous = {ref}, now = {head} (this checkout, uncommitted changes included); "
          f"{os.cpu_count()} CPUs, load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after, "
          f"{time.monotonic() - start:.0f} s\n")  # fmt: skip
    columns = ["path", "previous", "now", "change", *(["peer", "now vs peer"] if peer else []), "goal"]
    print("| " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * (len(columns) - 2) + "---|")
    for name, sides in cli.items():
        goal = GOALS["--help"] if "--help" in name and not name.endswith("CPU") else "—"
        label = (
            f"{name} (median of {args.repeats})" if not name.endswith("CPU") else "… CPU (user + sys) of the same runs"
        )
        print(row(label, sides, "ms", goal, peer=peer))
    if rest:
        name = "authenticated REST read by id, 64 connections"
        print(row(f"{name}: req/s", rest["rps"], "", "—", higher_better=True, peer=peer))
        print(row(f"{name}: server CPU per read", rest["cpu"], "µs", "—", peer=peer))
        bare = statistics.median(rest["rps"]["bare"])
        shares = [f"{statistics.median(rest['rps'][s]) / bare * 100:.0f} %" for s in ("previous", "now")]
        blank = " | |" if peer else ""
        print(f"| the read's share of a bare ASGI app's req/s ({bare:,.0f}) | {shares[0]} | {shares[1]} |{blank} | "
              f"{GOALS['read']} |")  # fmt: skip
        if rest["non2xx"].get("peer"):
            print(
                f"\n(orb-py answered {statistics.median(rest['non2xx']['peer']):,.0f} reads a run with a non-2xx status)"
            )
    if check:
        name = f"subject check, SDK in-process, one call ({args.constraints:,} constraints; peer: cedarpy)"
        print(row(name, check, "µs", GOALS["check"], peer=peer))
    if skipped:
        print(f"\n(left out to stay within --budget {args.budget:.0f} s on this machine: {', '.join(skipped)})")
    print("\nchange: now against previous (times: lower is better; req/s: higher is better). One run on a shared "
          "machine: read ratios, not absolute figures.")  # fmt: skip


if __name__ == "__main__":
    main()
