"""Quota reservation benchmark (docs/providers.md, `backends/local/store/quotas.py`), in one process:

    .venv/bin/python bench/quota_bench.py [--samples 400] [--postgres postgresql://postgres@127.0.0.1:5432/test]

The cost of a quota on a launch: `create_request` (no wait, one machine, the local provider) of a template with
`max_active` and a provider instance with `provider.quotas.max_active` — the check, the request and its
reservation in one transaction (BEGIN IMMEDIATE on SQLite; on PostgreSQL the quota rows locked first), the
reservation replaced by the machine when the launch is recorded — against the same template on an instance
without quotas (no reservation: the request is recorded as before), alternated request by request, the median CPU time
of each (this process's: the database server's share on PostgreSQL is not in it), on SQLite and (with `--postgres`, a database it may create tables in: a fresh one is made and
dropped) on PostgreSQL. The limits are far above what the run requests, so the quota never refuses. Prints a table;
`--json FILE` keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pluginsdk import PluginSDK  # noqa: E402

FAST = {"type": "local", "boot_delay": 3600, "terminate_delay": 0.0, "seed": 1}


def _config(storage: dict[str, Any], tmp: str) -> dict[str, Any]:
    quotas = {"max_active": {"capped": 1_000_000}}
    return {
        "storage": storage,
        "provider": {"type": "local", "instances": {"capped": FAST, "open": FAST}, "quotas": quotas},
        "sdk": {"reconcile_interval": 3600},
    }


async def _measure(config: dict[str, Any], samples: int) -> dict[str, float]:
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="with-quota", image_id="ami-1", provider="capped", max_active=1_000_000)
        await sdk.create_template(template_id="no-quota", image_id="ami-1", provider="open")
        times: dict[str, list[float]] = {"with-quota": [], "no-quota": []}
        for _ in range(20):  # warm-up: caches, prepared statements
            for t in times:
                await sdk.create_request(t, 1)
        for n in range(samples):
            order = ("with-quota", "no-quota") if n % 2 else ("no-quota", "with-quota")
            for t in order:
                started = time.process_time()  # this process's CPU: on a shared machine, not other processes' time
                await sdk.create_request(t, 1)
                times[t].append(time.process_time() - started)
        quota, base = statistics.median(times["with-quota"]), statistics.median(times["no-quota"])
        return {"with_quota_ms": quota * 1e3, "no_quota_ms": base * 1e3, "share": (quota - base) / quota}


async def _postgres(url: str, samples: int, tmp: str) -> dict[str, float]:
    import asyncpg  # type: ignore[import-untyped]

    admin = await asyncpg.connect(url)
    name = f"quota_bench_{uuid.uuid4().hex[:8]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        db = url.rsplit("/", 1)[0] + "/" + name
        storage = {"type": "postgresql", "url": db, "seal_key_file": str(Path(tmp) / "seal.key")}
        return await _measure(_config(storage, tmp), samples)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--postgres", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = await _measure(_config({"path": str(Path(tmp) / "store.db")}, tmp), args.samples)
        if args.postgres:
            results["postgresql"] = await _postgres(args.postgres, args.samples, tmp)
    print(f"{'store':<12}{'launch CPU, no quota':>22}{'with quotas':>14}{'reservation share':>20}")
    for store, r in results.items():
        print(f"{store:<12}{r['no_quota_ms']:>19.3f} ms{r['with_quota_ms']:>11.3f} ms{r['share'] * 100:>19.1f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
