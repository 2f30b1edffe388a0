"""The subject check in process: N calls of `sdk.check_access` on the generated policy of `bench/policy_bench.py`.

    python bench/check_inproc.py WORK [--checks 1000] [--constraints 1000] [--profile] [--sort tottime]

The policy (`--constraints` constraints, 200 roles, the users its first 1,000 questions name) is loaded into a
SQLite store under WORK by this tree's SDK, kept for the next run; the 1,000 questions are asked twice to warm
(each subject's bucket built), the heap is frozen, then `--checks` calls cycle through them, timed (p50 and
CPU µs a call) or, with `--profile`, run under cProfile. For a figure the box's load does not move, count
instructions: run under `valgrind --tool=callgrind` with `--checks 0` and `--checks N` and divide the
difference of the totals by N (docs/benchmarks.md, "The subject check, pushed").
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("work", type=Path)
    ap.add_argument("--checks", type=int, default=1000)
    ap.add_argument("--constraints", type=int, default=1000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--sort", default="tottime")
    args = ap.parse_args()
    asyncio.run(checks(args.work, args.constraints, args.checks, args.profile, args.sort))


async def checks(work: Path, constraints: int, n: int, profile: bool, sort: str) -> None:
    from pdp_bench import _load
    from policy_bench import generate

    from pluginsdk import PluginSDK

    g = generate(constraints, 1000)
    asked = {p.user_id for p, _, _, _ in g.decisions}
    g.principals = [p for p in g.principals if p.user_id in asked]
    work.mkdir(parents=True, exist_ok=True)
    store = work / f"check-{constraints}.db"
    seeded = store.exists()
    async with PluginSDK(config={"storage": {"path": str(store)}, "provider": {"type": "local"}}) as sdk:
        if not seeded:
            await _load(sdk, g)
        calls = [(t, m, p.user_id, p.mfa, a) for p, t, a, m in g.decisions]
        for _ in range(2):
            for t, m, user_id, mfa, a in calls:
                await sdk.check_access(t, m, user_id=user_id, mfa=mfa, attributes=a)
        gc.collect()
        gc.freeze()
        asked_calls = [calls[i % len(calls)] for i in range(n)]
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            for t, m, user_id, mfa, a in asked_calls:
                await sdk.check_access(t, m, user_id=user_id, mfa=mfa, attributes=a)
            prof.disable()
            pstats.Stats(prof).sort_stats(sort).print_stats(80)
            return
        lat: list[float] = []
        cpu0 = time.process_time()
        for t, m, user_id, mfa, a in asked_calls:
            t0 = time.perf_counter_ns()
            await sdk.check_access(t, m, user_id=user_id, mfa=mfa, attributes=a)
            lat.append((time.perf_counter_ns() - t0) / 1000)
        if lat:
            cpu = (time.process_time() - cpu0) / n * 1e6
            print(f"{n} checks: {statistics.median(lat):.2f} µs p50, {cpu:.2f} µs CPU a call")


if __name__ == "__main__":
    main()
