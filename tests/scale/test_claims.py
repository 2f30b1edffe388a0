"""One actor per request: a request claimed by one process is left alone by the others
(no provider call), and a claim of a process that died expires so another takes the request over."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from tests.support.backends import base_config, open_sdk_on
from tests.support.postgres import fresh_database


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def config(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    if request.param == "sqlite":
        yield base_config(tmp_path, sdk={"claim_seconds": 0.5, "reconcile_interval": 3600})
        return
    async with fresh_database() as url:
        yield base_config(
            tmp_path,
            storage={"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")},
            sdk={"claim_seconds": 0.5, "reconcile_interval": 3600},
        )


def engine_of(sdk: PluginSDK) -> Any:
    return sdk.backend.engine  # type: ignore[attr-defined]


async def test_a_claimed_request_is_left_to_its_holder_until_the_claim_ends(config: dict[str, Any]) -> None:
    async with PluginSDK(config=config) as a, PluginSDK(config=config) as b:
        await a.create_template(template_id="web", image_id="ami-1")
        created = await a.create_request("web", 2)
        rid = created.request_id
        await asyncio.sleep(0.2)  # the local provider's machines are up by now
        claims_a, claims_b = engine_of(a).store.claims, engine_of(b).store.claims
        token = await claims_a.take(rid)  # process A is "calling the provider" for the request
        assert token is not None
        assert await claims_b.take(rid) is None  # a second taker loses, atomically
        before = claims_b.skipped
        seen = await b.get_request(rid)  # B's status read reconciles: it must not act, only read
        assert claims_b.skipped > before
        assert seen.status.value in ("pending", "running")  # not advanced by B although the machines are up
        await claims_a.release(rid, token)
        assert await claims_a.live() == []
        done = await b.get_request(rid)  # now B may act, and does
        assert done.status.value == "completed"
        assert await claims_b.live() == []  # every claim released after the call


async def test_the_claim_of_a_dead_process_expires_and_another_takes_over(config: dict[str, Any]) -> None:
    async with PluginSDK(config=config) as a, PluginSDK(config=config) as b:
        await a.create_template(template_id="web", image_id="ami-1")
        rid = (await a.create_request("web", 1)).request_id
        await asyncio.sleep(0.2)
        db = engine_of(a).store.db
        await db.execute(  # a claim left by a process that was SIGKILLed mid-call
            "INSERT INTO request_claims (request_id, owner, expires_at) VALUES (:id, 'deadhost:1:x', :exp)",
            {"id": rid, "exp": __import__("time").time() + 0.4},
        )
        assert (await b.get_request(rid)).status.value != "completed"  # still held
        await asyncio.sleep(0.5)
        assert (await b.get_request(rid)).status.value == "completed"  # expired: B took it over
        rows = await db.fetchall("SELECT owner FROM request_claims")
        assert rows == []  # B's takeover claim replaced the dead one and was released


async def test_racing_status_reads_call_the_provider_once_at_a_time(config: dict[str, Any]) -> None:
    """Many concurrent reconciliations of one request from two engines: the provider is never called for
    it by two actors at once."""
    config["provider"]["local"]["boot_delay"] = 60  # still starting during the reads, however slow the launch
    async with PluginSDK(config=config) as a, PluginSDK(config=config) as b:
        await a.create_template(template_id="web", image_id="ami-1")
        rid = (await a.create_request("web", 3)).request_id
        active = 0
        peak = 0
        for sdk in (a, b):
            driver = await engine_of(sdk).provider()
            original = driver.describe

            async def describe(*args: Any, _orig: Any = original) -> Any:
                nonlocal active, peak
                active += 1
                peak = max(peak, active)
                try:
                    await asyncio.sleep(0.01)  # a provider call takes time
                    return await _orig(*args)
                finally:
                    active -= 1

            driver.describe = describe
        results = await asyncio.gather(*(s.get_request(rid) for _ in range(10) for s in (a, b)))
        assert peak == 1
        assert all(r.request_id == rid for r in results)
        assert await engine_of(a).store.claims.live() == []


_CREATOR = """
import asyncio, json, os, signal, sys
from backends.local.providers.local import LocalProvider
from pluginsdk import PluginSDK

launch = LocalProvider.launch

async def dies(self, *args):
    if sys.argv[3] == "after":  # the provider launched; its answer is never recorded
        await launch(self, *args)
    os.kill(os.getpid(), signal.SIGKILL)

LocalProvider.launch = dies

async def main():
    async with PluginSDK(config=json.loads(sys.argv[1])) as sdk:
        await sdk.create_request("web", 2, request_id=sys.argv[2])

asyncio.run(main())
"""


@pytest.mark.parametrize("killed", ["before", "after"])
async def test_a_request_whose_creator_died_at_the_launch_is_launched_once_by_the_next_reader(
    config: dict[str, Any], backend_kind: str, tmp_path: Path, killed: str
) -> None:
    """The creator is SIGKILLed as it calls the provider (before, or after the provider acted): the request
    stays pending with no machine recorded. The next status read takes the dead creator's claim over and
    launches it — or adopts what the provider made — so it completes with exactly the machines asked for,
    rather than waiting out its timeout and failing with "no machine came up"."""
    rid = "req-creator-died"
    async with PluginSDK(config=config) as local:
        await local.create_template(template_id="web", image_id="ami-1")
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _CREATOR, json.dumps(config), rid, killed, stderr=asyncio.subprocess.DEVNULL
        )
        assert await child.wait() == -signal.SIGKILL
        before = await local.get_request(rid, lightweight=True)
        assert before.status.value == "pending" and before.machine_ids == []
        db = engine_of(local).store.db
        made = await db.fetchall("SELECT instance_id FROM local_instances WHERE request_id = :r", {"r": rid})
        assert len(made) == (2 if killed == "after" else 0)
        async with open_sdk_on(backend_kind, config, tmp_path) as sdk:
            for _ in range(100):
                after = await sdk.get_request(rid)
                if after.status.terminal:
                    break
                await asyncio.sleep(0.05)
        assert after.status.value == "completed", after.message
        rows = await db.fetchall("SELECT instance_id FROM local_instances WHERE request_id = :r", {"r": rid})
        assert sorted(r["instance_id"] for r in rows) == sorted(after.machine_ids)  # launched once, none lost
        assert len(rows) == 2
        if killed == "after":
            assert {r["instance_id"] for r in made} == set(after.machine_ids)  # adopted, not launched again
        assert await engine_of(local).store.claims.live() == []
