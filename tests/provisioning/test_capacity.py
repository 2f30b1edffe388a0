"""Several provider instances, fallback between candidates on capacity, and the capacity memory — both backends.

Capacity failures come from the `local` provider's fault settings (`capacity_errors`, `capacity`), so the
order of attempts, the cooldown, the half-open probe and the recovery are those the engine really takes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK, ProviderError, ValidationError
from pluginsdk.models import MachineStatus, RequestStatus
from tests.support.backends import open_sdk

FAST = {"boot_delay": 0.05, "terminate_delay": 0.05, "seed": 7}


def instances(**given: dict[str, Any]) -> dict[str, Any]:
    return {"instances": {name: {"type": "local", **FAST, **settings} for name, settings in given.items()}}


@pytest.fixture
async def two(backend_kind: str, tmp_path: Path) -> AsyncIterator[PluginSDK]:
    """`east` has no m5.large, `west` has room for 3; candidates east then west."""
    provider = instances(east={"capacity_errors": ["m5.large"]}, west={"capacity": 3})
    async with open_sdk(backend_kind, tmp_path, provider=provider) as sdk:
        await sdk.create_template(
            template_id="burst",
            image_id="ami-1",
            instance_type="m5.large",
            offerings=[{"provider": "east"}, {"provider": "west"}],
        )
        yield sdk


async def settled(sdk: PluginSDK, request_id: str, seconds: float = 10.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        r = await sdk.get_request(request_id, long=True)
        if r.status.terminal or time.monotonic() > deadline:
            return r
        await asyncio.sleep(0.05)


def states(status: Any) -> dict[str, tuple[str, int]]:
    return {o.key: (o.state, o.failures) for o in status.offerings}


async def test_capacity_failure_falls_back_in_order_and_cools_the_candidate_down(two: PluginSDK) -> None:
    created = await two.create_request("burst", 2, wait=True, timeout=30)
    assert created.status == "completed"
    r = await two.get_request(created.request_id or "", long=True)
    assert {m.provider_name for m in r.machines} == {"west"} and len(r.machines) == 2
    assert r.provider_name == "west"
    attempts = r.provider_data["attempts"]
    assert [(a["provider"], a["outcome"]) for a in attempts] == [("east", "capacity"), ("west", "served")]
    assert "InsufficientInstanceCapacity" in attempts[0]["reason"] or "capacity" in attempts[0]["reason"]
    status = await two.get_providers_status()
    assert states(status) == {"east/m5.large/*/ondemand": ("cooling", 1)}
    assert {p.name: p.active_machines for p in status.providers}["west"] == 2
    (east,) = status.offerings
    assert east.cooldown_until is not None
    left = (east.cooldown_until - datetime.now(UTC)).total_seconds()
    assert 250 < left <= 300  # the documented first cooldown: 300 s
    # the next request does not ask east again while it cools down: it is skipped, with the reason recorded
    again = await two.create_request("burst", 1, wait=True, timeout=30)
    r2 = await two.get_request(again.request_id or "", long=True)
    assert [a["provider"] for a in r2.provider_data["attempts"]] == ["west"]
    (skip,) = r2.provider_data["skipped"]
    assert skip["provider"] == "east" and skip["reason"] == "cooling down" and skip["until"]
    assert states(await two.get_providers_status()) == {"east/m5.large/*/ondemand": ("cooling", 1)}
    counters = (await two.get_metrics()).counters
    assert counters["capacity.capacity_failures"] == 1 and counters["capacity.skipped"] == 1


async def test_partial_fulfilment_tops_up_from_the_next_candidate(two: PluginSDK) -> None:
    await two.create_template(
        template_id="spill", image_id="ami-1", instance_type="c5.large",
        offerings=[{"provider": "west"}, {"provider": "east"}],
    )  # fmt: skip
    created = await two.create_request("spill", 5, wait=True, timeout=30)
    r = await settled(two, created.request_id or "")
    running = [m for m in r.machines if m.status is MachineStatus.RUNNING]
    assert r.status is RequestStatus.COMPLETED and len(running) == 5
    assert sorted(m.provider_name for m in running) == ["east", "east", "west", "west", "west"]
    outcomes = [(a["provider"], a["outcome"], a["served"]) for a in r.provider_data["attempts"]]
    assert outcomes == [("west", "partial", 3), ("east", "served", 2)]
    assert sum(1 for m in r.machines if m.status.active) <= r.count
    synced = await two.sync_request(r.request_id)  # a finished request: what every instance holds, re-read
    assert sorted((m.machine_id, m.provider_name) for m in synced.machines) == sorted(
        (m.machine_id, m.provider_name) for m in r.machines
    )


async def test_no_candidate_with_capacity_fails_the_request_and_says_when_to_retry(two: PluginSDK) -> None:
    await two.create_template(
        template_id="none", image_id="ami-1", instance_type="m5.large", offerings=[{"provider": "east"}]
    )
    with pytest.raises(ProviderError) as first:
        await two.create_request("none", 1)
    retry_at = datetime.fromisoformat(first.value.details["retry_at"])
    (east,) = (await two.get_providers_status()).offerings
    assert east.cooldown_until is not None and east.cooldown_until <= retry_at  # never before the cooldown ends
    failed = await two.get_request(first.value.details["request_id"])
    assert failed.status is RequestStatus.FAILED and "east" in failed.message
    with pytest.raises(ProviderError, match="cooling down"):  # not asked again: skipped while it cools down
        await two.create_request("none", 1)


async def test_an_unknown_provider_instance_is_refused_on_the_template(two: PluginSDK) -> None:
    with pytest.raises(ValidationError, match="nowhere"):
        await two.create_template(
            template_id="bad", image_id="ami-1", offerings=[{"provider": "nowhere"}], validate_only=True
        )
    listed = {p.name: p.type for p in (await two.list_providers()).providers}
    assert listed["east"] == "local" and listed["west"] == "local" and listed["local"] == "local"


async def test_half_open_probe_then_recovery_and_a_doubling_cooldown(backend_kind: str, tmp_path: Path) -> None:
    provider = instances(small={"capacity": 1}, big={}) | {"capacity": {"cooldown_seconds": 1.5}}
    async with open_sdk(backend_kind, tmp_path, provider=provider) as sdk:
        await sdk.create_template(
            template_id="t", image_id="ami-1", offerings=[{"provider": "small"}, {"provider": "big"}]
        )

        async def provider_of(created: Any) -> str:
            r = await sdk.get_request(created.request_id or "", long=True)
            return str(r.machines[0].provider_name)

        async def until_cooled() -> None:  # the cooldown the memory reports has ended
            (small,) = (await sdk.get_providers_status()).offerings
            assert small.cooldown_until is not None
            await asyncio.sleep(max(0.0, (small.cooldown_until - datetime.now(UTC)).total_seconds()) + 0.1)

        a = await sdk.create_request("t", 1, wait=True, timeout=30)
        assert await provider_of(a) == "small"
        b = await sdk.create_request("t", 1)  # small is full: big serves
        assert await provider_of(b) == "big"
        assert states(await sdk.get_providers_status()) == {"small/*/*/ondemand": ("cooling", 1)}
        await until_cooled()
        assert states(await sdk.get_providers_status()) == {"small/*/*/ondemand": ("half-open", 1)}
        c = await sdk.create_request("t", 1)  # the probe: small is still full
        rc = await sdk.get_request(c.request_id or "", long=True)
        probe = rc.provider_data["attempts"][0]
        assert (probe["provider"], probe["probe"], probe["outcome"]) == ("small", True, "capacity")
        (small,) = (await sdk.get_providers_status()).offerings
        assert small.state == "cooling" and small.failures == 2 and small.cooldown_until is not None
        assert 1.5 < (small.cooldown_until - datetime.now(UTC)).total_seconds() <= 3.0  # doubled: 3 s
        await settled(sdk, (await sdk.create_return_request([a.machines[0].machine_id])).request_id or "")
        await until_cooled()  # small has room again
        d = await sdk.create_request("t", 1, wait=True, timeout=30)  # the probe succeeds: recovered
        assert await provider_of(d) == "small"
        assert states(await sdk.get_providers_status()) == {"small/*/*/ondemand": ("closed", 0)}
        await settled(sdk, (await sdk.create_return_request([m.machine_id for m in d.machines])).request_id or "")
        e = await sdk.create_request("t", 1)  # full traffic again, no probe
        re_ = await sdk.get_request(e.request_id or "", long=True)
        assert (re_.provider_data["attempts"][0]["provider"], re_.provider_data["attempts"][0]["probe"]) == (
            "small", False,
        )  # fmt: skip


async def test_machines_of_every_instance_are_returned_to_the_one_that_made_them(two: PluginSDK) -> None:
    await two.create_template(
        template_id="spill", image_id="ami-1", instance_type="c5.large",
        offerings=[{"provider": "west"}, {"provider": "east"}],
    )  # fmt: skip
    created = await two.create_request("spill", 4, wait=True, timeout=30)
    r = await settled(two, created.request_id or "")
    ids = [m.machine_id for m in r.machines if m.status is MachineStatus.RUNNING]
    ret = await two.create_return_request(ids)
    done = await settled(two, ret.request_id or "")
    assert done.status is RequestStatus.COMPLETED
    gone = await two.get_request(r.request_id, long=True)
    assert all(m.status.gone or m.status is MachineStatus.FAILED for m in gone.machines)
    assert {p.name: p.active_machines for p in (await two.get_providers_status()).providers}.get("east", 0) == 0


async def test_rest_attackers_get_4xx_in_the_one_envelope(tmp_path: Path) -> None:
    import httpx

    from tests.server.door import reader_key
    from tests.support.backends import base_config
    from tests.support.remote import admin_key, running_server

    config = base_config(tmp_path, provider=instances(east={"capacity_errors": ["m5.large"]}))
    admin, reader = await admin_key(config), await reader_key(config)
    async with PluginSDK(config=config) as local:  # a user holding a role that grants nothing
        await local.create_role("nothing", "grants nothing")
        await local.create_user_roles("nobody", ["nothing"])
        nobody = str((await local.create_api_key(api_key_name="k", description="no rights", user_id="nobody")).api_key)
    with running_server(config) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            denied = await client.get("/api/v1/providers/status", headers={"Authorization": nobody})
            assert denied.status_code == 403 and denied.json()["error_code"] == "FORBIDDEN"
            read = await client.get("/api/v1/providers/status", headers={"Authorization": reader})
            assert read.status_code == 200  # like provider health: a read route of basicReadOnly
            none = await client.get("/api/v1/providers/status")
            assert none.status_code == 401
            ok = await client.get("/api/v1/providers/status", headers={"Authorization": admin})
            assert ok.status_code == 200 and [p["name"] for p in ok.json()["providers"]] == ["local", "east"]
            base = {"templateId": "x", "imageId": "ami-1"}
            for offerings in ("east", [{"provider": 5}], [{}], [{"provider": "east", "weight": "high"}],
                              [{"provider": "nowhere"}], [{"provider": "east"}] * 20_000):  # fmt: skip
                bad = await client.post(
                    "/api/v1/templates", json={**base, "offerings": offerings}, headers={"Authorization": admin}
                )
                assert 400 <= bad.status_code < 500, (offerings if len(offerings) < 5 else "huge", bad.text)
                assert "error_code" in bad.json()
            written = await client.post(
                "/api/v1/templates",
                json={**base, "offerings": [{"provider": "east"}]},
                headers={"Authorization": reader},
            )
            assert written.status_code == 403
            made = await client.post(
                "/api/v1/templates",
                json={**base, "instanceType": "m5.large", "offerings": [{"provider": "east"}, {"provider": "local"}]},
                headers={"Authorization": admin},
            )
            assert made.status_code == 201, made.text
            asked = {"template_id": "x", "machine_count": 1}
            launched = await client.post("/api/v1/machines/request", json=asked, headers={"Authorization": admin})
            assert launched.status_code < 300, launched.text


async def test_a_machine_the_cloud_takes_back_reaches_hostfactory_and_lsf_returns(
    backend_kind: str, tmp_path: Path
) -> None:
    from pluginsdk.schedulers import get_strategy
    from tests.schedulers.ibm_contract import validate

    provider = instances(spot={"reclaim_after": 0.2}, steady={})
    async with open_sdk(backend_kind, tmp_path, provider=provider) as sdk:
        await sdk.create_template(
            template_id="t", image_id="ami-1", price_type="spot",
            offerings=[{"provider": "spot"}, {"provider": "steady"}],
        )  # fmt: skip
        req = await sdk.create_request("t", 2, wait=True, timeout=30)
        assert {m.provider_name for m in req.machines} == {"spot"}
        await asyncio.sleep(0.4)  # the simulated cloud takes both back
        listed = await sdk.list_return_requests()  # one return, or one per reconcile pass that found a reclaim
        assert {r.created_by for r in listed.requests} == {"provider"}
        taken = sorted(mid for r in listed.requests for mid in r.machine_ids)
        assert taken == sorted(m.machine_id for m in req.machines)
        status = await sdk.get_request_status([req.request_id or ""])
        for scheduler in ("hostfactory", "lsf"):
            strategy = get_strategy(scheduler)
            returns = strategy.render("list_return_requests", {}, listed, sdk.settings)
            validate(scheduler, "getReturnRequests", returns)
            assert sorted(r["machine"] for r in returns["requests"]) == sorted(m.name for m in req.machines)
            out = strategy.render("get_request_status", {}, status, sdk.settings)
            validate(scheduler, "getRequestStatus", out)
            for entry in out["requests"][0]["machines"]:
                assert entry["result"] == "fail" and "SpotInstanceTermination" in entry["message"]
                assert entry["providerName"] == "spot"
        record = await sdk.get_request(req.request_id or "", long=True)
        assert all(
            m.status is MachineStatus.TERMINATED and "Reclaimed by the provider" in (m.status_reason or "")
            for m in record.machines
        )
        assert (await sdk.list_return_requests()).total_count == listed.total_count  # each reported once


async def test_metrics_show_the_capacity_memory_and_machines_by_instance(tmp_path: Path) -> None:
    import httpx

    from tests.scale.test_operator import server
    from tests.support.backends import base_config

    config = base_config(tmp_path, provider=instances(east={"capacity_errors": ["m5.large"]}))
    async with PluginSDK(config=config) as sdk:  # the same store the served process reads its gauges from
        await sdk.create_template(
            template_id="x", image_id="ami-1", instance_type="m5.large",
            offerings=[{"provider": "east"}, {"provider": "local"}],
        )  # fmt: skip
        await sdk.create_request("x", 1, wait=True, timeout=30)
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient(base_url=url) as client:
        scraped = (await client.get("/metrics")).text
    cooling = 'offering="east/m5.large/*/ondemand",provider="east",state="cooling"} 1.0'
    assert f"pluginsdk_capacity_offering_failures{{{cooling}" in scraped
    assert 'pluginsdk_machines{provider="local",status="running"} 1.0' in scraped
    assert 'pluginsdk_provider_errors_total{operation="launch",provider="east"} 0.0' in scraped
