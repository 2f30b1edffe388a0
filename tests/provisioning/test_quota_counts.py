"""Kept quota counts (`quota_held`, store/quotas.py): equal to a recount of active machines and reservations
after launches, failed launches, returns and cancellations on both backends and stores; exact when processes
race for a quota's last machines; initialised from a recount when an existing store migrates."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from backends.local.store import schema
from pluginsdk import PluginSDK, ProviderError, TooManyRequestsError
from pluginsdk.models import MachineStatus
from tests.support.backends import open_sdk_on

ROOT = Path(__file__).resolve().parents[2]
FAST = {"type": "local", "boot_delay": 0.05, "terminate_delay": 0.05, "seed": 5}
SLOW = {"type": "local", "boot_delay": 3600, "terminate_delay": 0.0, "seed": 5}


def _with(config: dict[str, Any], **provider: Any) -> dict[str, Any]:
    return {**config, "provider": {**config.get("provider", {}), "type": "local", **provider}}


_ACTIVE = "(" + ", ".join(f"'{s.value}'" for s in MachineStatus if s.active) + ")"
_RECOUNT = (  # what the kept counts must equal: active machines and reservations, counted
    "SELECT subject, SUM(n) AS n FROM ("
    f" SELECT 'template:' || template_id AS subject, COUNT(*) AS n FROM machines WHERE status IN {_ACTIVE}"
    " GROUP BY template_id"
    f" UNION ALL SELECT 'provider:' || provider_name, COUNT(*) FROM machines WHERE status IN {_ACTIVE}"
    " GROUP BY provider_name"
    " UNION ALL SELECT 'template:' || template_id, SUM(machines) FROM quota_reservations GROUP BY template_id"
    " UNION ALL SELECT 'provider:' || provider, SUM(machines) FROM quota_reservations GROUP BY provider"
    ") AS counted GROUP BY subject"
)


async def _counts(config: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """The store's kept counts and its recount (subjects at 0 left out), read through a local engine."""
    async with PluginSDK(config=config) as sdk:
        db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
        kept = await db.fetchall("SELECT subject, held AS n FROM quota_held")
        recount = await db.fetchall(_RECOUNT)
    return _nonzero(kept), _nonzero(recount)


def _nonzero(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {r["subject"]: int(r["n"]) for r in rows if int(r["n"])}


async def _settled(sdk: PluginSDK, request_id: str) -> None:
    deadline = time.monotonic() + 15
    while not (await sdk.get_request(request_id)).status.terminal and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def test_kept_counts_equal_a_recount_after_launches_failures_returns_and_cancellations(
    backend_kind: str, any_store: dict[str, Any], tmp_path: Path
) -> None:
    east = {**FAST, "capacity_errors": ["big"]}
    config = _with(any_store, instances={"east": east, "slow": SLOW}, quotas={"max_active": {"east": 6, "slow": 6}})
    async with open_sdk_on(backend_kind, config, tmp_path) as sdk:
        await sdk.create_template(template_id="t", image_id="ami-1", provider="east", max_active=5)
        await sdk.create_template(template_id="big", image_id="ami-1", provider="east", instance_type="big")
        await sdk.create_template(template_id="pending", image_id="ami-1", provider="slow", max_active=4)
        first = await sdk.create_request("t", 2, wait=True, timeout=30)
        await sdk.create_request("t", 1, wait=True, timeout=30)
        with pytest.raises(ProviderError):  # a refused launch ends its request and its reservation
            await sdk.create_request("big", 1)
        cancelled = await sdk.create_request("pending", 2)
        await sdk.create_request("pending", 1)
        await sdk.cancel_request(cancelled.request_id or "")
        await _settled(sdk, cancelled.request_id or "")
        ret = await sdk.create_return_request([first.machines[0].machine_id])
        await _settled(sdk, ret.request_id or "")
        with pytest.raises(TooManyRequestsError) as refused:  # t holds 2 of its 5
            await sdk.create_request("t", 4)
        assert refused.value.details["in_use"] == 2
    kept, recount = await _counts(config)
    assert kept == recount
    assert (kept["template:t"], kept["provider:east"], kept["template:pending"]) == (2, 2, 1)


_RACER = """
import asyncio, json, sys, time
from pluginsdk import PluginSDK, TooManyRequestsError
config, start, tries = json.loads(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
async def main():
    made = 0
    async with PluginSDK(config=config) as sdk:
        await asyncio.sleep(max(0.0, start - time.time()))
        for _ in range(tries):
            try:
                await sdk.create_request("t", 1)
                made += 1
            except TooManyRequestsError:
                pass
    print(made)
asyncio.run(main())
"""


async def test_processes_racing_for_the_last_machines_of_a_quota_never_exceed_it(any_store: dict[str, Any]) -> None:
    """Four processes (SQLite: one file; PostgreSQL: their own connections) ask 8 machines each, one at a
    time, of a template and an instance holding 10: exactly 10 are granted, and the counts stay exact."""
    config = _with(any_store, instances={"east": SLOW}, quotas={"max_active": {"east": 10}})
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id="ami-1", provider="east", max_active=12)
    start = time.time() + 4
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = ["-c", _RACER, json.dumps(config), str(start), "8"]
    racers = [
        await asyncio.create_subprocess_exec(sys.executable, *argv, stdout=subprocess.PIPE, cwd=ROOT, env=env)
        for _ in range(4)
    ]
    made = [int((await r.communicate())[0]) for r in racers]
    assert all(r.returncode == 0 for r in racers)
    assert sum(made) == 10, made
    kept, recount = await _counts(config)
    assert kept == recount and kept["provider:east"] == 10 and kept["template:t"] == 10


async def test_an_existing_store_gets_its_counts_from_a_recount_when_it_migrates(any_store: dict[str, Any]) -> None:
    config = _with(any_store, instances={"east": SLOW}, quotas={"max_active": {"east": 10}})
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id="ami-1", provider="east", max_active=5)
        await sdk.create_request("t", 3)
        db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
        async with db.transaction():  # the store as migration 16 left it: no kept counts
            for trigger in (
                "quota_machine_added", "quota_machine_changed", "quota_machine_left", "quota_machine_joined",
                "quota_machine_removed", "quota_reservation_added", "quota_reservation_changed",
                "quota_reservation_removed",
            ):  # fmt: skip
                on = "machines" if "machine_" in trigger else "quota_reservations"
                pg = db.dialect == "postgresql"
                await db.execute(f"DROP TRIGGER IF EXISTS {trigger}" + (f" ON {on}" if pg else ""))
            await db.execute("DROP TABLE quota_held")
            await db.execute("DROP TABLE IF EXISTS quota_pending")  # PostgreSQL's, with its trigger
            await db.execute("UPDATE schema_version SET version = 16 WHERE id = 1")
    async with PluginSDK(config=config) as sdk:  # migrates to 17
        await sdk.create_request("t", 1)
        with pytest.raises(TooManyRequestsError) as refused:
            await sdk.create_request("t", 2)
        assert refused.value.details["in_use"] == 4
    kept, recount = await _counts(config)
    assert kept == recount and kept["template:t"] == 4


def test_the_triggers_count_the_statuses_a_quota_counts() -> None:
    """The statuses are written into migration 17's triggers: a status added later needs a new migration."""
    assert schema._ACTIVE == _ACTIVE


@pytest.mark.postgres
async def test_machine_writes_in_opposite_orders_do_not_deadlock_on_the_counts(tmp_path: Path) -> None:
    """PostgreSQL: two transactions each write machines of one template on two instances, in opposite
    orders, interleaved; both commit (the counts are locked only at commit, in sorted order) and the counts
    are exact."""
    asyncpg = pytest.importorskip("asyncpg")
    from tests.support.backends import base_config
    from tests.support.postgres import fresh_database

    async with fresh_database() as url:
        storage = {"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")}
        config = base_config(tmp_path, storage=storage)
        async with PluginSDK(config=config):  # migrated
            pass
        one, two = await asyncpg.connect(url), await asyncpg.connect(url)
        try:
            insert = (
                "INSERT INTO machines (machine_id, request_id, template_id, status, provider_name, created_at,"
                " updated_at, data) VALUES ($1, $2, 't', 'running', $3, '', '', '{}')"
            )
            for conn, rid in ((one, "r1"), (two, "r2")):
                await conn.execute(
                    "INSERT INTO requests (request_id, request_type, status, provider_name, created_at, updated_at,"
                    " data) VALUES ($1, 'provision', 'running', 'a', '', '', '{}')",
                    rid,
                )
            t1, t2 = one.transaction(), two.transaction()
            await t1.start()
            await t2.start()
            await one.execute(insert, "m1", "r1", "a")
            await two.execute(insert, "m2", "r2", "b")
            crossed = (one.execute(insert, "m3", "r1", "b"), two.execute(insert, "m4", "r2", "a"))
            await asyncio.wait_for(asyncio.gather(*crossed), 10)
            await asyncio.wait_for(asyncio.gather(t1.commit(), t2.commit()), 10)
            rows = await one.fetch("SELECT subject, held FROM quota_held WHERE held <> 0 ORDER BY subject")
            assert [(r["subject"], r["held"]) for r in rows] == [
                ("provider:a", 2),
                ("provider:b", 2),
                ("template:t", 4),
            ]
        finally:
            await one.close()
            await two.close()
