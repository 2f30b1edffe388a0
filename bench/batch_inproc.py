"""The REST batch of 1,000 subject checks in process: the server's side and the remote client's side apart.

    python bench/batch_inproc.py WORK server [--batches 100] [--allowed-only] [--profile]
    python bench/batch_inproc.py WORK client [--batches 100] [--allowed-only] [--profile]

WORK holds a store loaded with `bench/policy_bench.py`'s generated policy at 1,000 constraints (made on the first
run and kept), an administrator's API key and the batch: the policy's first 1,000 questions, as that bench's REST
batch asks them. `server` posts the batch's body to the served ASGI app (`operator_app`, no socket, no HTTP
parser) `--batches` times; `client` runs `check_access_batch` through the remote SDK against a canned reply
(`httpx.MockTransport` answering the server's own bytes for the batch). Both warm up with 5 batches first, then
print the CPU time a batch (`time.process_time`) or, with `--profile`, the cProfile of the timed batches. For a
figure the box's load does not move, count instructions: run under `valgrind --tool=callgrind` with
`--batches 0` and `--batches N` and divide the difference of the totals by N (docs/benchmarks.md, "The batch,
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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WARM = 5
PATH = "/auth/check/batch"


def _config(work: Path) -> dict[str, Any]:
    return {"storage": {"path": str(work / "pdp.db")}, "provider": {"type": "local"}, "logging": {"level": "WARNING"}}


async def _seed(work: Path) -> dict[str, Any]:
    """The store loaded, a key issued, the batch written (pdp_bench's own steps)."""
    from pdp_bench import _load, _question
    from policy_bench import generate

    from pluginsdk import PluginSDK
    from tests.support.remote import admin_key

    g = generate(1000, 1000)
    config = _config(work)
    async with PluginSDK(config=config) as sdk:
        await _load(sdk, g)
    key = await admin_key(config, "bench")
    return {"key": key, "batch": [_question(*q) for q in g.decisions[:1000]]}


async def _server(work: Path, seed: dict[str, Any], n: int, body: bytes, profile: bool) -> bytes:
    from asgi_inproc import Caller, started

    from pluginsdk.config import Settings
    from pluginsdk.server import operator_app

    app = operator_app(Settings.model_validate(_config(work)))
    headers = {"authorization": seed["key"], "content-type": "application/json"}
    caller = Caller(app, "POST", PATH, headers, body)
    async with started(app):
        await _timed(caller.call, n, profile)
    if caller.status != 200:
        raise SystemExit(f"the server answered {caller.status}: {caller.answer[:500]!r}")
    return caller.answer


async def _client(seed: dict[str, Any], n: int, answer: bytes, allowed_only: bool, profile: bool) -> None:
    import httpx

    from pluginsdk import PluginSDK

    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=answer, headers={"content-type": "application/json"})

    transport = httpx.MockTransport(reply)
    async with PluginSDK(backend="remote", api_url="http://bench", api_key="k", transport=transport) as remote:

        async def one() -> None:
            await remote.check_access_batch(seed["batch"], allowed_only=allowed_only)

        await _timed(one, n, profile)


async def _timed(one: Any, n: int, profile: bool) -> None:
    for _ in range(WARM):
        await one()
    if not n:
        return
    prof = cProfile.Profile() if profile else None
    c0 = time.process_time()
    if prof is not None:
        prof.enable()
    for _ in range(n):
        await one()
    if prof is not None:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
    print(f"{(time.process_time() - c0) / n * 1000:.3f} ms CPU a batch ({n} batches)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work", type=Path, help="Directory of the loaded store (made and loaded when missing).")
    ap.add_argument("side", choices=("server", "client"))
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--allowed-only", action="store_true", help="Ask for the decisions alone (`allowed_only`).")
    ap.add_argument("--profile", action="store_true", help="Run the timed batches under cProfile and print it.")
    args = ap.parse_args()
    work: Path = args.work
    seeded = work / "seed.json"
    if not seeded.exists():
        work.mkdir(parents=True, exist_ok=True)
        seeded.write_text(json.dumps(asyncio.run(_seed(work))))
    seed = json.loads(seeded.read_text())
    body = json.dumps({"questions": seed["batch"], **({"allowedOnly": True} if args.allowed_only else {})}).encode()
    canned = work / ("answer-bare.json" if args.allowed_only else "answer-full.json")
    if args.side == "server":
        answer = asyncio.run(_server(work, seed, args.batches, body, args.profile))
        canned.write_bytes(answer)
    else:
        if not canned.exists():
            canned.write_bytes(asyncio.run(_server(work, seed, 0, body, False)))
        asyncio.run(_client(seed, args.batches, canned.read_bytes(), args.allowed_only, args.profile))


if __name__ == "__main__":
    main()
