"""One actor per request (issue 16 item 2): a request claimed by one process is left alone by the others
(no provider call), and a claim of a process that died expires so another takes the request over."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from tests.support.backends import base_config
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
        claims_a, claims_b = engine_of(a).db.claims, engine_of(b).db.claims
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
        db = engine_of(a).db.db
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
        assert await engine_of(a).db.claims.live() == []
