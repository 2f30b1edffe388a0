"""The `local` provider: deterministic under a seed, state shared through the store."""

from __future__ import annotations

from pathlib import Path

from pluginsdk import PluginSDK
from tests.support.backends import base_config

RID = "req-00000000-0000-0000-0000-000000000001"


async def _outcome(tmp_path: Path, seed: int) -> list[tuple[str, str, str | None]]:
    config = base_config(tmp_path, provider={"local": {"seed": seed, "failure_rate": 0.4, "boot_delay": 0.01}})
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        req = await sdk.create_request("web", 6, request_id=RID, wait=True)
        return [(m.machine_id, m.status.value, m.ip_address) for m in req.machines]


async def test_same_seed_same_machines_and_fates(tmp_path: Path) -> None:
    a = await _outcome(tmp_path / "a", 42)
    b = await _outcome(tmp_path / "b", 42)
    c = await _outcome(tmp_path / "c", 43)
    assert a == b
    assert a != c
    assert {status for _, status, _ in a} <= {"running", "failed"}


async def test_state_survives_a_restart(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        req = await sdk.create_request("web", 2, wait=True)
    async with PluginSDK(config=config) as again:
        r = await again.get_request(req.id, long=True)
        assert [m.machine_id for m in r.machines] == [m.machine_id for m in req.machines]
        assert (await again.get_provider_health(detailed=True)).details["active"] == 2
