"""Calls lost through HAProxy when a server closes an idle keep-alive connection HAProxy is about to reuse:

    .venv/bin/python bench/fleet_idle.py [--calls 1000 --callers 16 --keep-alive 5 --jitter 0.02] [--config FILE]
                                         [--pause 0]

Starts three `pluginsdk server start` processes on one SQLite file behind HAProxy, configured by
tests/support/fleet.py's `haproxy_config` (or by the HAProxy configuration in `--config`, its ports put in as
`{port}`, `{socket}`, `{s0}`, `{s1}`, `{s2}`), with `api.keep_alive_timeout` `--keep-alive` seconds. Each of
`--callers` clients, on a keep-alive connection of its own to HAProxy, POSTs a template's validation, pauses the
server's keep-alive timeout (plus or minus up to `--jitter` s), and calls again, until `--calls` calls are
made in all: each call after a pause may land on an idle server connection in the instant its server closes it.
Prints the answers by status, the calls that got no answer and the calls per second (`--pause 0`: back to back,
what a configuration costs).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support import fleet  # noqa: E402
from tests.support.backends import base_config  # noqa: E402


async def _run(calls: int, callers: int, keep_alive: float, pause: float, jitter: float, config: Path | None) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fleet-idle-"))
    if config is not None:
        template = config.read_text()

        def configured(port: int, admin_socket: Path, servers: list[int]) -> str:
            return template.format(port=port, socket=admin_socket, **{f"s{i}": p for i, p in enumerate(servers)})

        fleet.haproxy_config = configured  # type: ignore[assignment]
    answers: Counter[int | str] = Counter()
    remaining = calls
    async with fleet._running(
        "sqlite", base_config(tmp, api={"keep_alive_timeout": keep_alive}), tmp, servers=3, args=()
    ) as f:

        async def caller() -> None:
            nonlocal remaining
            template = {"template_id": "web", "image_id": "ami-1"}
            async with httpx.AsyncClient(base_url=f.url, headers={"authorization": f.key}, timeout=30) as client:
                await asyncio.sleep(random.uniform(0, pause))  # the callers' pauses spread over time
                while remaining > 0:
                    remaining -= 1
                    try:
                        answers[(await client.post("/api/v1/templates/validate", json=template)).status_code] += 1
                    except httpx.TransportError as exc:
                        answers[f"{type(exc).__name__}: {exc}"] += 1
                    if pause:
                        await asyncio.sleep(pause + random.uniform(-jitter, jitter))

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(callers)))
        elapsed = time.perf_counter() - started
    lost = sum(n for a, n in answers.items() if isinstance(a, str))
    print(
        f"{calls} calls, {callers} callers, keep-alive {keep_alive} s, pause {pause} s ± {jitter} s, {config or 'haproxy_config'}"
    )
    for answer, n in answers.most_common():
        print(f"  {n:6d}  {answer}")
    print(f"  calls with no answer: {lost}")
    print(f"  {calls / elapsed:.0f} calls/s ({elapsed:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--callers", type=int, default=16)
    parser.add_argument("--keep-alive", type=float, default=5.0, help="the servers' api.keep_alive_timeout")
    parser.add_argument("--jitter", type=float, default=0.02)
    parser.add_argument("--config", type=Path, help="an HAProxy configuration to use instead of haproxy_config")
    parser.add_argument("--pause", type=float, help="seconds between a caller's calls (default: --keep-alive)")
    args = parser.parse_args()
    pause = args.keep_alive if args.pause is None else args.pause
    asyncio.run(_run(args.calls, args.callers, args.keep_alive, pause, args.jitter, args.config))


if __name__ == "__main__":
    main()
