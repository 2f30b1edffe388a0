"""Quotas: machines of a template and of a provider instance at once, machines per user per window — both
backends; a refusal is 429 in the one envelope saying when capacity frees."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK, TooManyRequestsError
from pluginsdk.models import RequestStatus
from tests.support.backends import base_config, open_sdk

FAST = {"type": "local", "boot_delay": 0.05, "terminate_delay": 0.05, "seed": 5}


async def _gone(sdk: Any, request_id: str) -> None:
    deadline = time.monotonic() + 10
    while not (await sdk.get_request(request_id)).status.terminal and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def test_a_template_holds_at_most_max_active_machines(backend_kind: str, tmp_path: Path) -> None:
    async with open_sdk(backend_kind, tmp_path) as sdk:
        await sdk.create_template(template_id="t", image_id="ami-1", max_active=3)
        first = await sdk.create_request("t", 2, wait=True, timeout=30)
        with pytest.raises(TooManyRequestsError) as refused:
            await sdk.create_request("t", 2)
        d = refused.value.details
        assert (d["quota"], d["subject"], d["limit"], d["in_use"], d["asked"], d["retry_after"]) == (
            "template", "t", 3, 2, 2, 60,
        )  # fmt: skip
        assert "frees as machines are returned" in refused.value.message
        assert (await sdk.list_requests()).total_count == 1  # nothing recorded for the refusal
        await sdk.create_request("t", 1, wait=True, timeout=30)  # within the quota
        ret = await sdk.create_return_request([m.machine_id for m in first.machines])
        await _gone(sdk, ret.request_id or "")
        assert (await sdk.create_request("t", 2, wait=True, timeout=30)).status == "completed"


async def test_a_provider_instance_quota_caps_each_candidate_and_refuses_when_none_has_room(
    backend_kind: str, tmp_path: Path
) -> None:
    provider = {"instances": {"east": FAST, "west": FAST}, "quotas": {"max_active": {"east": 2, "west": 2}}}
    async with open_sdk(backend_kind, tmp_path, provider=provider) as sdk:
        await sdk.create_template(
            template_id="t", image_id="ami-1", offerings=[{"provider": "east"}, {"provider": "west"}]
        )
        await sdk.create_template(template_id="only-east", image_id="ami-1", provider="east")
        created = await sdk.create_request("t", 3, wait=True, timeout=30)  # east's room is 2: west tops up
        r = await sdk.get_request(created.request_id or "", long=True)
        assert sorted(m.provider_name for m in r.machines) == ["east", "east", "west"]
        assert [(a["provider"], a["asked"]) for a in r.provider_data["attempts"]] == [("east", 2), ("west", 1)]
        second = await sdk.create_request("t", 1, wait=True, timeout=30)
        r2 = await sdk.get_request(second.request_id or "", long=True)
        assert r2.provider_data["skipped"][0]["reason"] == "at its quota of 2 machines"
        assert r2.machines[0].provider_name == "west"
        with pytest.raises(TooManyRequestsError) as refused:  # east and west hold 4 of 4
            await sdk.create_request("t", 1)
        assert refused.value.details["quota"] == "provider" and refused.value.details["limit"] == 4
        with pytest.raises(TooManyRequestsError, match="east"):
            await sdk.create_request("only-east", 1)


async def test_machines_per_user_per_window_and_when_capacity_frees(backend_kind: str, tmp_path: Path) -> None:
    provider = {"quotas": {"machines_per_user": 3, "window_seconds": 3}}
    async with open_sdk(backend_kind, tmp_path, provider=provider) as sdk:
        await sdk.create_template(template_id="t", image_id="ami-1")
        first = await sdk.create_request("t", 2)
        await sdk.create_request("t", 1)
        with pytest.raises(TooManyRequestsError) as refused:
            await sdk.create_request("t", 1)
        d = refused.value.details
        assert (d["quota"], d["limit"], d["in_use"]) == ("user", 3, 3)
        frees = datetime.fromisoformat(d["frees_at"])
        made = (await sdk.get_request(first.request_id or "")).created_at
        assert abs((frees - made).total_seconds() - 3) < 1.01  # the oldest request leaves the window
        assert 1 <= d["retry_after"] <= 4 and "capacity frees at" in refused.value.message
        await asyncio.sleep(max(0.0, (frees - datetime.now(UTC)).total_seconds()) + 0.1)
        again = await sdk.create_request("t", 1, wait=True, timeout=30)
        assert again.status == RequestStatus.COMPLETED.value


async def test_the_refusal_on_rest_is_429_with_retry_after_in_the_envelope(tmp_path: Path) -> None:
    import httpx

    from tests.support.remote import admin_key, running_server

    config = base_config(tmp_path)
    key = await admin_key(config)
    with running_server(config) as url:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": key}, timeout=30) as client:
            made = await client.post("/api/v1/templates", json={"templateId": "t", "imageId": "ami-1", "maxActive": 1})
            assert made.status_code == 201
            body = {"template_id": "t", "machine_count": 1}
            assert (await client.post("/api/v1/machines/request", json=body)).status_code in (200, 201, 202)
            refused = await client.post("/api/v1/machines/request", json=body)
            assert refused.status_code == 429 and refused.headers["retry-after"] == "60"
            envelope = refused.json()
            assert envelope["error_code"] == "TOO_MANY_REQUESTS" and envelope["details"]["quota"] == "template"
            for bad in (0, -1, "x", 10**9):
                wrong = await client.post(
                    "/api/v1/templates", json={"templateId": f"b{bad}", "imageId": "ami-1", "maxActive": bad}
                )
                assert wrong.status_code == 400, wrong.text


async def test_a_failed_launch_leaves_nothing_reserved(backend_kind: str, tmp_path: Path) -> None:
    """The reservation a request made when it was recorded ends with the request: a launch the provider
    refuses does not keep holding the instance's room."""
    from pluginsdk import ProviderError

    east = {**FAST, "capacity_errors": ["big"]}
    provider = {"instances": {"east": east}, "quotas": {"max_active": {"east": 1}}}
    async with open_sdk(backend_kind, tmp_path, provider=provider) as sdk:
        await sdk.create_template(template_id="big", image_id="ami-1", provider="east", instance_type="big")
        await sdk.create_template(template_id="small", image_id="ami-1", provider="east", instance_type="small")
        for _ in range(2):  # each refused launch ends its request, and its reservation with it
            with pytest.raises(ProviderError):
                await sdk.create_request("big", 1)
        assert (await sdk.create_request("small", 1, wait=True, timeout=30)).status == "completed"
        with pytest.raises(TooManyRequestsError):  # the machine holds the room now
            await sdk.create_request("small", 1)


async def test_one_request_id_raced_on_two_engines_reserves_once(any_store: dict[str, Any]) -> None:
    """Twenty creates of one request id at once on two engines sharing the store: one request is recorded,
    it holds one machine of the template's quota (no reservation left behind by a loser), every other call
    answers it again or 409."""
    from pluginsdk import AlreadyExistsError

    async with PluginSDK(config=any_store) as a, PluginSDK(config=any_store) as b:
        await a.create_template(template_id="t", image_id="ami-1", max_active=2)

        async def one(sdk: PluginSDK) -> str:
            try:
                return str((await sdk.create_request("t", 1, request_id="req-raced")).request_id)
            except AlreadyExistsError:
                return "409"

        answers = await asyncio.gather(*(one(a if n % 2 else b) for n in range(20)))
        assert set(answers) <= {"req-raced", "409"} and "req-raced" in answers
        assert (await a.list_requests()).total_count == 1
        await b.create_request("t", 1)  # the second of two
        with pytest.raises(TooManyRequestsError) as refused:
            await a.create_request("t", 1)
        assert refused.value.details["in_use"] == 2
