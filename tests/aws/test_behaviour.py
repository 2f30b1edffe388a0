"""Dry runs, health, batched describes and spot interruptions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from tests.aws.conftest import AMI, REGION, aws_config
from tests.aws.proxy import AwsProxy
from tests.support.cli import clean_environment, invoke


async def test_dry_run_never_calls_aws(tmp_path: Path, proxy: AwsProxy) -> None:
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="EC2Fleet", instance_type="t3.small")
        answer = await sdk.create_request("t", 3, dry_run=True)
        assert answer.dry_run and "nothing was created" in answer.message
        assert (await sdk.validate_template(template_id="t")).valid
        assert [p.name for p in (await sdk.list_providers()).providers if p.name == "aws"] == ["aws"]
    assert proxy.total() == 0


def test_cli_dry_run_never_calls_aws(tmp_path: Path, proxy: AwsProxy) -> None:
    config = tmp_path / "config.json"
    import json

    config.write_text(json.dumps(aws_config(tmp_path, proxy.url)))
    env = clean_environment()
    tpl = ["templates", "create", "--template-id", "t", "--image-id", AMI, "--provider-api", "RunInstances"]
    assert invoke(env, "--config", str(config), *tpl).code == 0
    out = invoke(env, "--config", str(config), "--dry-run", "machines", "request", "t", "4")
    assert out.code == 0
    assert "dry" in out.out.lower()
    assert proxy.total() == 0


async def test_health_reports_region_and_failure_without_raising(tmp_path: Path, proxy: AwsProxy) -> None:
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        health = await sdk.get_provider_health(detailed=True)
        assert health.healthy
        assert health.details["region"] == REGION
        assert f"{REGION}a" in health.details["zones"]
    async with PluginSDK(config=aws_config(tmp_path / "down", "http://127.0.0.1:9", max_attempts=1)) as sdk:
        down = await sdk.get_provider_health(detailed=True)
        assert not down.healthy
        assert "DescribeAvailabilityZones" in down.details["error"]


async def test_concurrent_status_reads_share_one_describe(tmp_path: Path, proxy: AwsProxy) -> None:
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="RunInstances", instance_type="t3.small")
        ids = [(await sdk.create_request("t", 2)).request_id for _ in range(6)]
        before = proxy.calls["DescribeInstances"]
        states = await asyncio.gather(*(sdk.get_request(rid, long=True) for rid in ids))
        assert all(len(r.machines) == 2 for r in states)
        assert {m.status.value for r in states for m in r.machines} == {"running"}
        assert proxy.calls["DescribeInstances"] - before == 1  # six requests, one DescribeInstances


async def test_spot_interruption_is_listed_as_a_return_request(tmp_path: Path, proxy: AwsProxy) -> None:
    from moto.backends import get_backend
    from moto.ec2.models.instances import StateReason

    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(
            template_id="t", image_id=AMI, provider_api="SpotFleet", instance_type="t3.small", fleet_type="request"
        )
        req = await sdk.create_request("t", 3, wait=True, timeout=30)
        assert req.status == "completed", req.message
        victim = req.machines[0].machine_id
        mine = req.machines[1].machine_id
        returned = await sdk.create_return_request(machine_ids=[mine])  # ours: not an interruption
        # AWS takes the victim back: what moto cannot do by itself, done to moto's own record of the instance
        instance = get_backend("ec2")["123456789012"][REGION].get_instance(victim)
        instance.terminate()
        instance.state_reason = StateReason(
            "Server.SpotInstanceTermination: Spot instance termination", "Server.SpotInstanceTermination"
        )
        listed = await sdk.list_return_requests()
        by_provider = [r for r in listed.requests if r.created_by == "provider"]
        assert [[m.machine_id for m in r.machines] for r in by_provider] == [[victim]]
        assert "Server.SpotInstanceTermination" in (by_provider[0].machines[0].status_reason or "")
        assert returned.request_id in {r.request_id for r in listed.requests}
        again = await sdk.list_return_requests()  # recorded once, not once per listing
        assert len([r for r in again.requests if r.created_by == "provider"]) == 1
        machine = await sdk.get_machine(victim)
        assert machine.status.value == "terminated"


async def test_region_and_profile_from_plugin_variables(
    tmp_path: Path, proxy: AwsProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "aws-config").write_text("[profile hpc]\nregion = eu-west-1\n")
    (tmp_path / "aws-credentials").write_text("[hpc]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    config = aws_config(tmp_path, proxy.url)
    del config["provider"]["region"]
    monkeypatch.delenv("AWS_DEFAULT_REGION")  # the usual chain: the environment would beat the profile
    monkeypatch.setenv("PLUGIN_PROFILE", "hpc")
    async with PluginSDK(config=config) as sdk:
        health = await sdk.get_provider_health(detailed=True)
        assert health.details["region"] == "eu-west-1"  # the profile's region
        assert "eu-west-1a" in health.details["zones"]
    monkeypatch.setenv("PLUGIN_REGION", "ap-southeast-2")
    async with PluginSDK(config=config) as sdk:
        assert (await sdk.get_provider_health(detailed=True)).details["region"] == "ap-southeast-2"
    monkeypatch.setenv("PLUGIN_PROFILE", "missing")
    monkeypatch.delenv("PLUGIN_REGION")
    async with PluginSDK(config=config) as sdk:
        down = await sdk.get_provider_health(detailed=True)
        assert not down.healthy and "ProfileNotFound" in str(down.details)
