"""No stuck states, through the SDK on both backends: stable identity without a seed, return by host name,
failed returns that free their machines, force, returned-before-running, fresh listings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pluginsdk import PluginSDK
from pluginsdk.models import RequestStatus, RequestStatusList
from pluginsdk.schedulers import get_strategy
from tests.schedulers.ibm_contract import validate
from tests.support.backends import base_config, open_sdk
from tests.support.cli import clean_environment, invoke


async def _settled(sdk: PluginSDK, request_id: str, polls: int = 200) -> RequestStatus:
    for _ in range(polls):
        (r,) = (await sdk.get_request_status([request_id])).requests
        if r.status.terminal:
            return r.status
        await asyncio.sleep(0.05)
    raise AssertionError(f"{request_id} still {r.status} after {polls} polls")


async def test_names_and_addresses_are_fixed_without_a_seed(tmp_path: Path) -> None:
    """Each engine without `seed` draws its own random seed (as each scheduler poll is a new process);
    the machines keep the names and addresses they were made with, all distinct."""
    config = base_config(tmp_path, provider={"local": {"boot_delay": 0.05, "terminate_delay": 0.05}})
    seen = []
    for _ in range(3):
        async with PluginSDK(config=config) as sdk:
            if not seen:
                await sdk.create_template(template_id="web", image_id="ami-1")
                await sdk.create_request("web", 30, wait=True, request_id="req-00000000-0000-0000-0000-00000000beef")
            r = await sdk.get_request("req-00000000-0000-0000-0000-00000000beef", long=True)
            seen.append({m.machine_id: (m.name, m.ip_address) for m in r.machines})
    assert seen[0] == seen[1] == seen[2]
    assert len({name for name, _ in seen[0].values()}) == 30 and len({ip for _, ip in seen[0].values()}) == 30


async def test_return_by_host_name(sdk: PluginSDK) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1")
    req = await sdk.create_request("web", 2, wait=True)
    m = req.machines[0]
    assert m.name
    ret = await sdk.create_return_request(machine_ids=[m.name])
    assert ret.processed_machines == [m.machine_id]
    assert await _settled(sdk, ret.request_id) is RequestStatus.COMPLETED
    again = await sdk.create_return_request(machine_ids=[m.name])  # gone: a completed, empty return
    assert again.processed_machines == [] and "already gone" in again.message


async def test_scheduler_return_of_a_starting_machine_stops_its_launch(backend_kind: str, tmp_path: Path) -> None:
    """The scheduler input has no force flag: returning a starting machine withdraws it; all withdrawn
    ends the request `cancelled`, which HostFactory reads as `complete`."""
    async with open_sdk(backend_kind, tmp_path, provider={"local": {"boot_delay": 30, "terminate_delay": 0.05}}) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        req = await sdk.create_request("web", 2)
        r = await sdk.get_request(req.request_id, long=True)
        refused = await sdk.create_return_request(machine_ids=[r.machines[0].machine_id])
        assert refused.processed_machines == [] and "still starting" in refused.skipped_machines[0].reason
        hf = get_strategy("hostfactory")
        params = hf.parse_input("create_return_request", {"machines": [{"name": m.name} for m in r.machines]})
        ret = await sdk.create_return_request(**params)
        assert sorted(ret.processed_machines) == sorted(m.machine_id for m in r.machines)
        assert await _settled(sdk, ret.request_id) is RequestStatus.COMPLETED
        assert await _settled(sdk, req.request_id) is RequestStatus.CANCELLED
        status = await sdk.get_request_status([req.request_id])
        out = hf.render("get_request_status", {}, status, sdk.settings)
        validate("hostfactory", "getRequestStatus", out)
        assert out["requests"][0]["status"] == "complete"
        assert {m["result"] for m in out["requests"][0]["machines"]} == {"fail"}
        assert all("before it was running" in m["message"] for m in out["requests"][0]["machines"])


async def test_a_failed_return_frees_its_machines_and_force_works(tmp_path: Path) -> None:
    failing = base_config(tmp_path, provider={"local": {"boot_delay": 0.05, "terminate_failure_rate": 1.0}})
    async with PluginSDK(config=failing) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        req = await sdk.create_request("web", 2, wait=True)
        ids = [m.machine_id for m in req.machines]
        ret = await sdk.create_return_request(machine_ids=ids)
        assert ret.processed_machines == [] and "failed to take back 2" in ret.message
        (failed,) = (await sdk.get_request_status([ret.request_id])).requests
        assert failed.status is RequestStatus.FAILED  # ended at once, not running forever
        assert "Simulated provider failure" in failed.message
        hf = get_strategy("hostfactory").render(
            "get_request_status", {}, RequestStatusList(requests=[failed]), sdk.settings
        )
        validate("hostfactory", "getRequestStatus", hf)
        assert hf["requests"][0]["status"] == "complete_with_error"
        assert {m["result"] for m in hf["requests"][0]["machines"]} == {"fail"}
        addresses = {m.machine_id: m.ip_address for m in req.machines}
        assert all(addresses.values())
        for scheduler in ("hostfactory", "lsf"):  # still running: they keep their addresses
            out = get_strategy(scheduler).render(
                "get_request_status", {}, RequestStatusList(requests=[failed]), sdk.settings
            )
            validate(scheduler, "getRequestStatus", out)
            assert {m["machineId"]: m["privateIpAddress"] for m in out["requests"][0]["machines"]} == addresses
        for i in ids:
            assert (await sdk.get_machine(i)).return_request_id is None
    working = base_config(tmp_path, provider={"local": {"boot_delay": 0.05, "terminate_delay": 30}})
    async with PluginSDK(config=working) as sdk:
        first = await sdk.create_return_request(machine_ids=ids[:1])  # returnable again
        assert first.processed_machines == ids[:1]
        # still shutting down for 30 s: another return does not take it over
        other = await sdk.create_return_request(machine_ids=ids[:1], force_return=True)
        assert not other.request_id
        assert f"already being returned by {first.request_id}" in other.skipped_machines[0].reason
    cfg = tmp_path / "cli.json"
    cfg.write_text(json.dumps(working))
    res = invoke(clean_environment(), "--config", str(cfg), "machines", "return", "--force-return", *ids)
    assert res.code == 0, res.out + res.err
    out = res.json()
    assert out["processed_machines"] == ids[1:]  # the one the failed return held, freed
    assert out["skipped_machines"][0]["machine_id"] == ids[0]


async def test_listings_never_show_a_finished_request_running(sdk: PluginSDK) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1")
    req = await sdk.create_request("web", 2)  # nobody polls it
    await asyncio.sleep(0.3)  # it finished meanwhile (boot 0.05 s)
    listed = await sdk.list_requests()
    assert {r.request_id: r.status for r in listed.requests}[req.request_id] is RequestStatus.COMPLETED
    active = await sdk.list_active_requests()
    assert req.request_id not in {r.request_id for r in active.requests}
    (status,) = (await sdk.get_request_status([req.request_id])).requests
    assert status.status is RequestStatus.COMPLETED


async def test_many_unknown_names_are_skipped_not_a_failure(sdk: PluginSDK) -> None:
    """A return of 2,000 names nobody knows (a confused or hostile caller): each skipped "not found"."""
    await sdk.create_template(template_id="web", image_id="ami-1")
    req = await sdk.create_request("web", 1, wait=True)
    names = [f"ip-10-0-{i // 250}-{i % 250}.nowhere'; DROP TABLE machines; --" for i in range(2000)]
    out = await sdk.create_return_request(machine_ids=names)
    assert not out.request_id and len(out.skipped_machines) == 2000
    assert {s.reason for s in out.skipped_machines} == {"not found"}
    assert (await sdk.get_machine(req.machines[0].machine_id)).status.value == "running"
