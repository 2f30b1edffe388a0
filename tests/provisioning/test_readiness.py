"""Bootstrap failures and protected mode — both backends.

Machines that never say they are ready come from the `local` provider's `ready_rate` 0, so the boot timeout,
the one replacement, the failures in a row and the protection are what the engine really does.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from pluginsdk.errors import SDKError
from pluginsdk.models import MachineStatus, RequestStatus
from tests.support.backends import open_sdk

NEVER_READY = {"local": {"boot_delay": 0.05, "terminate_delay": 0.05, "seed": 7, "ready_rate": 0.0}}
BOOT = {"boot": {"requires_ready": True, "timeout_seconds": 0.4, "max_failures": 2}}


async def settled(sdk: PluginSDK, request_id: str, seconds: float = 20.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        r = await sdk.get_request(request_id, long=True)
        if r.status.terminal or time.monotonic() > deadline:
            return r
        await asyncio.sleep(0.05)


async def test_machines_never_ready_are_replaced_once_then_protect_the_template(
    backend_kind: str, tmp_path: Path
) -> None:
    from pluginsdk.schedulers import get_strategy
    from tests.schedulers.ibm_contract import validate

    async with open_sdk(backend_kind, tmp_path, provider=NEVER_READY) as sdk:
        await sdk.create_template(template_id="boot", image_id="ami-1", instance_type="m5.large", configuration=BOOT)
        for n in (1, 2):
            created = await sdk.create_request("boot", 1)
            r = await settled(sdk, created.request_id or "")
            assert r.status is RequestStatus.FAILED, r.message
            assert "Bootstrap failure" in r.message
            assert len(r.machines) == 2  # the machine and its one replacement
            assert all(m.status in (MachineStatus.TERMINATED, MachineStatus.SHUTTING_DOWN) for m in r.machines)
            assert all("Bootstrap failure: not ready within 0.4 s" in (m.status_reason or "") for m in r.machines)
            replacement = r.provider_data["attempts"][-1]
            assert replacement["replaces"] == r.machines[0].machine_id or replacement["replaces"] in {
                m.machine_id for m in r.machines
            }
            protected = (await sdk.get_template("boot")).template.protected
            assert (protected is None) == (n == 1)
        assert "2 bootstrap failures in a row" in (protected or "")
        with pytest.raises(SDKError) as refused:
            await sdk.create_request("boot", 1)
        assert refused.value.http_status == 409
        assert "protected" in refused.value.message and "update the template" in refused.value.message
        assert "pluginsdk" not in refused.value.message  # SDK, REST and MCP callers share it: no CLI command
        listed = await sdk.list_templates()
        assert [t.protected is not None for t in listed.templates] == [True]
        for scheduler in ("hostfactory", "lsf"):  # the HPC schedulers see a template they may not ask
            out = get_strategy(scheduler).render("list_templates", {}, listed, sdk.settings)
            validate(scheduler, "getAvailableTemplates", out)
            assert out["templates"][0]["availableNumber"] == 0 and "'boot' is protected" in out["message"]
        status = await sdk.get_providers_status()
        assert set(status.protected) == {"boot"} and "protected" in status.message
        written = await sdk.update_template("boot", configuration={"boot": {"timeout_seconds": 30}})
        assert "protection is cleared" in written.message
        assert (await sdk.get_template("boot")).template.protected is None
        assert (await sdk.get_providers_status()).protected == {}
        again = await sdk.create_request("boot", 1)  # launches again: the machine waits for its signal
        machine = await _running(sdk, again.request_id or "")
        assert (await sdk.get_request(again.request_id or "")).status is RequestStatus.RUNNING
        await sdk.mark_machine_ready(machine)
        assert (await settled(sdk, again.request_id or "")).status is RequestStatus.COMPLETED


async def _running(sdk: PluginSDK, request_id: str) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        r = await sdk.get_request(request_id, long=True)
        up = [m.machine_id for m in r.machines if m.status is MachineStatus.RUNNING]
        if up:
            return up[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no machine ran")


async def test_a_ready_machine_resets_the_failures_and_ready_machines_complete_at_once(
    backend_kind: str, tmp_path: Path
) -> None:
    async with open_sdk(backend_kind, tmp_path) as sdk:  # machines report ready by themselves (ready_rate 1)
        await sdk.create_template(template_id="ok", image_id="ami-1", configuration=BOOT)
        created = await sdk.create_request("ok", 2, wait=True, timeout=30)
        assert created.status == "completed"
        assert (await sdk.get_template("ok")).template.protected is None
        r = await sdk.get_request(created.request_id or "", long=True)
        assert "attempts" not in r.provider_data  # nothing replaced


async def test_bad_boot_settings_are_an_invalid_template(backend_kind: str, tmp_path: Path) -> None:
    async with open_sdk(backend_kind, tmp_path) as sdk:
        for bad in ("yes", {"timeout_seconds": -1}, {"max_failures": 0}, {"requires_ready": "y"}, {"wait": 1}):
            with pytest.raises(SDKError) as exc:
                await sdk.create_template(template_id="b", image_id="ami-1", configuration={"boot": bad})
            assert exc.value.http_status == 400 and "configuration.boot" in exc.value.message


async def test_two_engines_on_one_store_share_the_protection(any_store: dict[str, Any]) -> None:
    any_store["provider"]["local"]["ready_rate"] = 0.0
    boot = {"boot": {"timeout_seconds": 0.3, "max_failures": 1}}  # requires_ready defaults to true
    async with PluginSDK(config=any_store) as a, PluginSDK(config=any_store) as b:
        await a.create_template(template_id="shared", image_id="ami-1", configuration=boot)
        created = await a.create_request("shared", 1)
        assert (await settled(a, created.request_id or "")).status is RequestStatus.FAILED
        with pytest.raises(SDKError) as refused:  # b never saw a machine of it
            await b.create_request("shared", 1)
        assert refused.value.http_status == 409
        assert set((await b.get_providers_status()).protected) == {"shared"}
        await b.update_template("shared", description="image fixed")
        assert (await a.get_template("shared")).template.protected is None


async def test_rest_attackers_of_the_readiness_signal(tmp_path: Path) -> None:
    import httpx

    from tests.server.door import reader_key
    from tests.support.backends import base_config
    from tests.support.remote import admin_key, running_server

    config = base_config(tmp_path, provider={"local": {**NEVER_READY["local"]}})
    admin, reader = await admin_key(config), await reader_key(config)
    async with PluginSDK(config=config) as local:
        await local.create_template(template_id="t", image_id="ami-1", configuration={"boot": {"timeout_seconds": 60}})
        created = await local.create_request("t", 1)
        machine = await _running(local, created.request_id or "")
    with running_server(config) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            path = f"/api/v1/machines/{machine}/ready"
            assert (await client.post(path)).status_code == 401
            denied = await client.post(path, headers={"Authorization": reader})  # a reader may not signal
            assert denied.status_code == 403 and denied.json()["error_code"] == "FORBIDDEN"
            missing = await client.post("/api/v1/machines/i-nothere/ready", headers={"Authorization": admin})
            assert missing.status_code == 404 and "error_code" in missing.json()
            huge = await client.post(f"/api/v1/machines/{'i' * 300}/ready", headers={"Authorization": admin})
            assert 400 <= huge.status_code < 500 and "error_code" in huge.json()
            junk = await client.post(path, content=b"{not json", headers={"Authorization": admin})
            assert junk.status_code == 200, junk.text  # a route without a body reads none
            ok = await client.post(path, headers={"Authorization": admin})
            assert ok.status_code == 200, ok.text
            assert ok.json()["machine_id"] == machine
            bad_boot = await client.post(
                "/api/v1/templates",
                json={
                    "templateId": "b",
                    "imageId": "ami-1",
                    "configuration": {"boot": {"timeout_seconds": "x" * 10_000}},
                },
                headers={"Authorization": admin},
            )
            assert bad_boot.status_code == 400 and bad_boot.json()["error_code"] == "INVALID_TEMPLATE"
    async with PluginSDK(config=config) as local:
        assert (await settled(local, created.request_id or "")).status is RequestStatus.COMPLETED


async def test_a_startup_script_signals_readiness_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local provider runs the template's startup script as a process; it calls `pluginsdk machines ready`."""
    from tests.support.cli import PLUGINSDK, cli_environment

    local = "    boot_delay: 0.05\n    terminate_delay: 0.05\n    run_user_data: true\n    ready_rate: 0\n"
    config = "provider:\n  local:\n" + local
    env = cli_environment(tmp_path, config)
    for key in ("PLUGIN_CONFIG", "PLUGIN_STORAGE_PATH", "XDG_DATA_HOME", "PYTHONPATH"):
        monkeypatch.setenv(key, env[key])
    script = f'exec {PLUGINSDK} machines ready "$PLUGINSDK_MACHINE_ID" > {tmp_path}/ready.json'
    async with PluginSDK() as sdk:
        boot = {"boot": {"timeout_seconds": 60}}
        await sdk.create_template(template_id="scripted", image_id="ami-1", user_data=script, configuration=boot)
        created = await sdk.create_request("scripted", 1)
        r = await settled(sdk, created.request_id or "", seconds=60)
        assert r.status is RequestStatus.COMPLETED, r.message
        assert len(r.machines) == 1  # ready in time: nothing replaced
        # the CLI prints its answer after the store recorded the signal: the request may settle first
        deadline = asyncio.get_running_loop().time() + 30
        while not (text := (tmp_path / "ready.json").read_text()) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert r.machines[0].machine_id in text


_KILLED = """
import asyncio, json, os, signal, sys
from backends.local.providers.local import LocalProvider
from pluginsdk import PluginSDK

launch = LocalProvider.launch

async def dies_before_the_replacement(self, request, template, count):
    if request.request_id.endswith("-1"):  # the replacement is recorded, the machine terminated: die now
        print(request.request_id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return await launch(self, request, template, count)

LocalProvider.launch = dies_before_the_replacement

async def main():
    async with PluginSDK(config=json.loads(sys.argv[1])) as sdk:
        boot = {"boot": {"timeout_seconds": 0.3}}
        await sdk.create_template(template_id="t", image_id="ami-1", configuration=boot)
        await sdk.create_request("t", 1, request_id="req-killed")
        while True:  # each status read reconciles: the timeout, the replacement
            await sdk.get_request("req-killed")
            await asyncio.sleep(0.05)

asyncio.run(main())
"""


async def test_a_process_killed_before_launching_a_replacement_loses_nothing(any_store: dict[str, Any]) -> None:
    import json
    import os
    import signal
    import sys

    from tests.support.cli import ROOT

    never = {**any_store, "provider": {**any_store["provider"], "local": {**NEVER_READY["local"]}}}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _KILLED, json.dumps(never),
        stdout=asyncio.subprocess.PIPE, cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert child.stdout is not None
    try:
        assert (await asyncio.wait_for(child.stdout.readline(), 60)).strip() == b"req-killed-1"
        assert await asyncio.wait_for(child.wait(), 30) == -signal.SIGKILL
    finally:  # a child that never reached its kill polls forever: never leave it behind
        if child.returncode is None:
            child.kill()
            await child.wait()
    async with PluginSDK(config=any_store) as sdk:  # machines here report ready by themselves
        stored = await sdk.backend.engine.store.get_request("req-killed")  # type: ignore[attr-defined]
        assert [a["outcome"] for a in stored.provider_data["attempts"]] == ["served", "launching"]
        r = await settled(sdk, "req-killed")
        assert r.status is RequestStatus.COMPLETED, r.message
        first, replacement = r.machines
        assert r.provider_data["attempts"][1]["replaces"] == first.machine_id
        assert "Bootstrap failure" in (first.status_reason or "") and first.status is not MachineStatus.RUNNING
        assert replacement.status is MachineStatus.RUNNING
        assert (await sdk.get_template("t")).template.protected is None


async def test_a_replacement_refused_for_capacity_cools_its_candidate_and_asks_the_next(
    backend_kind: str, tmp_path: Path
) -> None:
    """`east` holds one machine (the one not ready counts until it is gone), so its replacement is refused for
    capacity there: east cools down and `west` serves the replacement — the request completes."""
    fast = {"type": "local", "boot_delay": 0.05, "seed": 7}
    provider = {
        "instances": {
            "east": {**fast, "capacity": 1, "ready_rate": 0.0, "terminate_delay": 30},
            "west": {**fast, "terminate_delay": 0.05},
        }
    }
    async with open_sdk(backend_kind, tmp_path, provider=provider) as sdk:
        await sdk.create_template(
            template_id="boot", image_id="ami-1", instance_type="m5.large", configuration=BOOT,
            offerings=[{"provider": "east"}, {"provider": "west"}],
        )  # fmt: skip
        created = await sdk.create_request("boot", 1)
        r = await settled(sdk, created.request_id or "")
        assert r.status is RequestStatus.COMPLETED, r.message
        attempts = [(a["provider"], a["outcome"], a.get("replaces")) for a in r.provider_data["attempts"]]
        replaced = next(m.machine_id for m in r.machines if m.provider_name == "east")
        assert attempts == [("east", "served", None), ("east", "capacity", replaced), ("west", "served", replaced)]
        assert "capacity" in r.provider_data["attempts"][1]["reason"]
        running = [m for m in r.machines if m.status is MachineStatus.RUNNING]
        assert [m.provider_name for m in running] == ["west"]
        (east,) = (await sdk.get_providers_status()).offerings
        assert (east.key, east.state, east.failures) == ("east/m5.large/*/ondemand", "cooling", 1)
        assert (await sdk.get_template("boot")).template.protected is None  # capacity is no bootstrap failure


def test_the_cli_names_the_command_that_clears_a_protection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.cli import cli_environment, invoke

    local = "    boot_delay: 0.05\n    terminate_delay: 0.05\n    ready_rate: 0\n"
    env = cli_environment(tmp_path, "provider:\n  local:\n" + local)
    for key in ("PLUGIN_CONFIG", "PLUGIN_STORAGE_PATH", "XDG_DATA_HOME"):
        monkeypatch.setenv(key, env[key])

    async def protect() -> None:
        async with PluginSDK() as sdk:
            boot = {"boot": {"timeout_seconds": 0.3, "max_failures": 1}}
            await sdk.create_template(template_id="boot", image_id="ami-1", configuration=boot)
            created = await sdk.create_request("boot", 1)
            assert (await settled(sdk, created.request_id or "")).status is RequestStatus.FAILED

    asyncio.run(protect())
    refused = invoke(env, "machines", "request", "boot", "1")
    assert refused.code == 1 and "pluginsdk" not in refused.json()["error"]
    assert "Clear it with `pluginsdk templates update boot`." in refused.err
