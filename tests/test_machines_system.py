"""Machines and system queries — on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import NotFoundError, PluginSDK, ValidationError
from pluginsdk.models import MachineStatus
from tests.support.backends import open_sdk


@pytest.fixture
async def running(sdk: PluginSDK) -> tuple[PluginSDK, list[str]]:
    await sdk.create_template(template_id="web", image_id="ami-1", instance_type="t3.small")
    await sdk.create_template(template_id="db", image_id="ami-2")
    web = await sdk.create_request("web", 2, wait=True)
    db = await sdk.create_request("db", 1, wait=True)
    return sdk, [m.machine_id for m in web.machines] + [m.machine_id for m in db.machines]


async def test_get_machine(running: tuple[PluginSDK, list[str]]) -> None:
    sdk, ids = running
    m = await sdk.get_machine(ids[0])
    assert m.machine_id == ids[0] and m.status is MachineStatus.RUNNING and m.template_id == "web"
    assert m.ip_address and m.created_at and m.instance_type == "t3.small"
    with pytest.raises(NotFoundError) as exc:
        await sdk.get_machine("i-nope")
    assert exc.value.error_code == "MACHINE_NOT_FOUND"


async def test_list_machines_filters(running: tuple[PluginSDK, list[str]]) -> None:
    sdk, ids = running
    assert (await sdk.list_machines()).total_count == 3
    assert {m.machine_id for m in (await sdk.list_machines(template_id="web")).machines} == set(ids[:2])
    assert (await sdk.list_machines(status="running")).total_count == 3
    assert (await sdk.list_machines(status="terminated")).total_count == 0
    page = await sdk.list_machines(limit=1, offset=1)
    assert len(page.machines) == 1 and page.total_count == 3
    with pytest.raises(ValidationError):
        await sdk.list_machines(status="sleeping")


async def test_machine_status_of_several(running: tuple[PluginSDK, list[str]]) -> None:
    sdk, ids = running
    res = await sdk.get_machine_status([ids[0], "i-missing"])
    assert [m.machine_id for m in res.machines] == [ids[0]]
    assert not res.success and "i-missing" in res.message
    single = await sdk.get_machine_status(ids[1])
    assert single.success and single.machines[0].status is MachineStatus.RUNNING


async def test_machine_health_and_active_count(running: tuple[PluginSDK, list[str]]) -> None:
    sdk, ids = running
    h = await sdk.get_machine_health(ids[0])
    assert h.healthy and h.status == "running" and h.checks["has_address"]
    count = await sdk.get_active_machine_count()
    assert count.count == 3 and count.by_template == {"web": 2, "db": 1}
    assert (await sdk.get_active_machine_count(template_id="db")).count == 1
    ret = await sdk.create_return_request([ids[2]])
    assert ret.processed_machines == [ids[2]]
    assert (await sdk.get_machine_health(ids[2])).healthy is False


async def test_configuration_is_redacted_and_sourced(backend_kind: str, tmp_path: Path) -> None:
    async with open_sdk(backend_kind, tmp_path, api={"key": "psdk_secret_value"}) as sdk:
        view = await sdk.get_configuration()
        assert view.configuration["provider"]["type"] == "local"
        assert "psdk_secret_value" not in view.to_json()
        assert view.sources["storage.path"] == "config dict"
        only = await sdk.get_configuration(group="storage")
        assert list(only.configuration) == ["storage"]
        with pytest.raises(ValidationError):
            await sdk.get_configuration(group="nope")


async def test_providers_health_status_metrics(running: tuple[PluginSDK, list[str]]) -> None:
    sdk, _ = running
    providers = await sdk.list_providers()
    names = {p.name: p for p in providers.providers}
    assert names["local"].default and "RunInstances" in names["local"].apis and "aws" in names
    health = await sdk.get_provider_health(detailed=True)
    assert health.healthy and health.provider_name == "local" and health.details["active"] == 3
    status = await sdk.get_system_status()
    assert status.provider == "local" and status.storage == "sqlite" and status.active_machines == 3
    metrics = await sdk.get_metrics()
    assert metrics.counters["create_request.calls"] >= 2
