"""Quotas held exactly by a fleet: 60 concurrent one-machine requests spread over every server (and worker)
against a quota of 3 leave exactly 3 recorded and active — a template's, a provider instance's and a user's
quota; every other answer is the 429 envelope naming that quota, with nothing recorded for it."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from pluginsdk import PluginSDK
from tests.support.fleet import Fleet

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def _race(fleet: Fleet, template_id: str, users: list[str]) -> Counter[str]:
    """60 requests of one machine at once, the n-th by users[n % len(users)] to server n % servers (HAProxy's
    round-robin, made certain), each on its own connection (the kernel spreads them over a server's
    workers); what each answered: "ok", or the quota a 429 with `Retry-After` names."""
    keys = await fleet.keys_for(users)
    barrier = asyncio.Barrier(60)

    async def one(n: int, client: httpx.AsyncClient) -> str:
        url = fleet.servers[n % len(fleet.servers)].url
        headers = {"Authorization": keys[n % len(keys)]}
        body = {"template_id": template_id, "machine_count": 1}
        await barrier.wait()
        answer = await client.post(f"{url}/api/v1/machines/request", json=body, headers=headers)
        if answer.status_code == 429 and int(answer.headers["retry-after"]) > 0:
            return str(answer.json()["details"]["quota"])
        assert answer.status_code in (200, 201, 202), answer.text
        return "ok"

    limits = httpx.Limits(max_connections=60, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        return Counter(await asyncio.gather(*(one(n, client) for n in range(60))))


async def _active(sdk: PluginSDK, template_id: str) -> int:
    machines = (await sdk.list_machines(template_id=template_id)).machines
    return sum(1 for m in machines if m.status.active)


async def test_sixty_concurrent_requests_against_quotas_of_three_leave_exactly_three(fleet: Fleet) -> None:
    async with PluginSDK(backend="remote", api_url=fleet.url, api_key=fleet.key, config=fleet.config) as admin:
        await admin.create_template(template_id="capped", image_id="ami-1", max_active=3)
        await admin.create_template(template_id="on-east", image_id="ami-1", provider="east")
        await admin.create_template(template_id="free", image_id="ami-1")
        cases = {
            "template": ("capped", [f"tpl-{i}" for i in range(20)]),
            "provider": ("on-east", [f"prov-{i}" for i in range(20)]),
            "user": ("free", ["greedy"]),
        }
        for quota, (template_id, users) in cases.items():
            answers = await _race(fleet, template_id, users)
            assert answers == Counter({"ok": 3, quota: 57}), (quota, answers)
            recorded = await admin.list_requests(template_id=template_id)
            assert recorded.total_count == 3, quota  # nothing recorded for a refusal
            assert await _active(admin, template_id) == 3, quota
