"""The authenticated REST read in process: N reads of `GET /api/v1/requests/{id}` through the served ASGI app.

    python bench/read_inproc.py WORK [--reads 3000] [--profile] [--sort cumulative]

The app is `operator_app` (metrics installed, as `serve()` runs it) on a store under WORK seeded as
`bench/ab.py` seeds its REST read (`seed-server`, kept for the next run); its lifespan is started, 500 reads
warm it, the startup heap is frozen, then `--reads` reads are timed (CPU µs a read: `time.process_time`) or,
with `--profile`, run under cProfile. No socket, no HTTP parser: what is left is the app's own work. For a
figure the box's load does not move, count instructions: run under `valgrind --tool=callgrind` with
`--reads 0` and `--reads N` and divide the difference of the totals by N (docs/benchmarks.md, "The read,
pushed").
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

WARM = 500


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work", type=Path, help="Directory of the seeded store (made and seeded when missing).")
    ap.add_argument("--reads", type=int, default=3000)
    ap.add_argument("--profile", action="store_true", help="Run the timed reads under cProfile and print it.")
    ap.add_argument("--sort", default="cumulative", help="cProfile's sort key.")
    args = ap.parse_args()
    import ab

    from pluginsdk.config import Settings
    from pluginsdk.server import freeze_startup_heap, operator_app

    work: Path = args.work
    seeded = work / "seed.json"
    if not seeded.exists():
        work.mkdir(parents=True, exist_ok=True)
        seeded.write_text(json.dumps(ab.seed_server(work)))
    seed = json.loads(seeded.read_text())
    app = operator_app(Settings.model_validate({**ab.server_config(work), "logging": {"level": "WARNING"}}))
    asyncio.run(reads(app, seed, args.reads, args.profile, args.sort, freeze_startup_heap))


async def reads(app: Any, seed: dict[str, str], n: int, profile: bool, sort: str, freeze: Any) -> None:
    from asgi_inproc import Caller, started

    read = Caller(app, "GET", f"/api/v1/requests/{seed['rid']}", {"authorization": seed["key"]})
    async with started(app):
        for _ in range(WARM):
            await read.call()
        if read.status != 200:
            raise SystemExit(f"the read answered {read.status}: {read.answer[:300]!r}")
        freeze()
        profiler = cProfile.Profile() if profile else None
        if profiler is not None:
            profiler.enable()
        cpu = time.process_time()
        for _ in range(n):
            await read.call()
        cpu = time.process_time() - cpu
        if profiler is not None:
            profiler.disable()
            pstats.Stats(profiler).sort_stats(sort).print_stats(60)
        if n:
            print(f"{cpu / n * 1e6:.1f} µs of CPU a read ({n} reads)")


if __name__ == "__main__":
    main()
