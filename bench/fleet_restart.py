"""Calls lost through HAProxy while every server of a fleet restarts in turn, drained first or not:

    .venv/bin/python bench/fleet_restart.py [--rounds 5 --callers 8 --store sqlite|postgresql] [--undrained]

Starts three `pluginsdk server start` processes behind HAProxy as tests/support/fleet.py does (on one SQLite
file, or on a fresh PostgreSQL database), then `--callers` clients, each on a keep-alive connection of its own,
POST a template's validation (it stores nothing) back to back while each server restarts `--rounds` times:
`Fleet.restart` (drained out of HAProxy, then SIGTERM), or with `--undrained` SIGTERM while the server is still
in rotation. Prints the answers by status and the calls that got no answer.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.backends import base_config  # noqa: E402
from tests.support.fleet import Fleet, _routed, _running, _start, _stop, fleet  # noqa: E402


async def _undrained(f: Fleet, index: int) -> None:
    """The restart without HAProxy's runtime API: SIGTERM while in rotation, started again, routed again."""
    assert f.admin_socket is not None
    await _stop(f.servers[index])
    await _start(f.servers[index], f.config_file)
    await _routed(f.admin_socket, f"s{index}")


async def _run(rounds: int, callers: int, store: str, undrained: bool) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fleet-restart-"))
    config = base_config(tmp)
    running = fleet(store, config, tmp) if store == "postgresql" else _running(store, config, tmp, servers=3, args=())
    answers: Counter[int | str] = Counter()
    async with running as f:
        done = asyncio.Event()

        async def caller() -> None:
            template = {"template_id": "web", "image_id": "ami-1"}
            async with httpx.AsyncClient(base_url=f.url, headers={"authorization": f.key}, timeout=30) as client:
                while not done.is_set():
                    try:
                        answers[(await client.post("/api/v1/templates/validate", json=template)).status_code] += 1
                    except httpx.TransportError as exc:
                        answers[f"{type(exc).__name__}: {exc}"] += 1

        calling = [asyncio.create_task(caller()) for _ in range(callers)]
        try:
            for _ in range(rounds):
                for index in range(len(f.servers)):
                    await (_undrained(f, index) if undrained else f.restart(index))
        finally:
            done.set()
            await asyncio.gather(*calling)
    restarts = rounds * 3
    lost = sum(n for a, n in answers.items() if isinstance(a, str))
    print(f"{'undrained' if undrained else 'drained'}, {store}: {restarts} restarts, {callers} callers")
    for answer, n in answers.most_common():
        print(f"  {n:6d}  {answer}")
    print(f"  calls with no answer: {lost}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callers", type=int, default=8)
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--undrained", action="store_true", help="SIGTERM each server while still in rotation")
    args = parser.parse_args()
    asyncio.run(_run(args.rounds, args.callers, args.store, args.undrained))


if __name__ == "__main__":
    main()
