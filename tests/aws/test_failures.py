"""Bad images, capacity errors, throttling and credential hygiene, as AWS answers them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from pluginsdk.errors import ProviderError
from tests.aws.conftest import AMI, aws_config, cloud_instances, subnets
from tests.aws.proxy import AwsProxy


async def _template(sdk: PluginSDK, api: str = "RunInstances", image: str = AMI, **extra: Any) -> None:
    await sdk.create_template(template_id="t", image_id=image, provider_api=api, instance_type="t3.small", **extra)


@pytest.mark.parametrize("api", ["RunInstances", "EC2Fleet", "SpotFleet", "ASG"])
async def test_bad_ami_fails_the_request_with_the_cloud_code(
    tmp_path: Path, proxy: AwsProxy, ec2: Any, api: str
) -> None:
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await _template(sdk, api, image="ami-00000000")
        with pytest.raises(ProviderError) as err:
            await sdk.create_request("t", 2, request_id="req-bad-ami")
        # moto answers an ASG on a bad image with a 500 page (AWS would record a failed scaling activity)
        code = "ResponseParserError" if api == "ASG" else "InvalidAMIID"
        assert code in err.value.details["provider_code"]
        stored = await sdk.get_request("req-bad-ami")
        assert stored.status == "failed"
        assert code in stored.message
    assert await cloud_instances(ec2) == {}
    assert (await ec2.describe_launch_templates())["LaunchTemplates"] == []  # nothing left behind


async def test_capacity_error_moves_the_share_to_another_subnet(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    nets = await subnets(ec2)
    proxy.fail("RunInstances", "InsufficientInstanceCapacity", "We currently do not have sufficient capacity.")
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await _template(sdk, subnet_ids=nets[:2])
        req = await sdk.create_request("t", 5, wait=True, timeout=30)
        assert req.status == "completed", req.message
        assert len(req.machines) == 5
    assert proxy.calls["RunInstances"] == 3  # two shares, one of them retried elsewhere


async def test_capacity_error_everywhere_fails_with_its_code(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    proxy.fail("RunInstances", "InsufficientInstanceCapacity", "No capacity.", times=100)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await _template(sdk, instance_types={"t3.small": 1, "t3.medium": 1})
        with pytest.raises(ProviderError) as err:
            await sdk.create_request("t", 2)
        assert err.value.details["provider_code"] == "InsufficientInstanceCapacity"
    assert proxy.calls["RunInstances"] == 2  # each instance type tried once
    assert await cloud_instances(ec2) == {}


@pytest.mark.parametrize("api", ["RunInstances", "ASG"])
async def test_throttling_is_retried_with_backoff(tmp_path: Path, proxy: AwsProxy, api: str) -> None:
    launch = "RunInstances" if api == "RunInstances" else "CreateAutoScalingGroup"
    code = "RequestLimitExceeded" if api == "RunInstances" else "Throttling"
    proxy.fail(launch, code, "Rate exceeded", status=503 if api == "RunInstances" else 400, times=2)
    proxy.fail("DescribeInstances", "RequestLimitExceeded", "Request limit exceeded.", status=503, times=3)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await _template(sdk, api)
        req = await sdk.create_request("t", 3, wait=True, timeout=30)
        assert req.status == "completed", req.message
        health = await sdk.get_provider_health(detailed=True)
        assert health.details["throttled"] == 5
    assert proxy.calls[launch] == 3


async def test_throttling_that_never_ends_becomes_a_provider_error(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    proxy.fail("RunInstances", "RequestLimitExceeded", "Request limit exceeded.", status=503, times=100)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url, max_attempts=3)) as sdk:
        await _template(sdk)
        with pytest.raises(ProviderError) as err:
            await sdk.create_request("t", 1)
        assert err.value.details["provider_code"] == "RequestLimitExceeded"
        assert err.value.details["attempts"] == 3
    assert proxy.calls["RunInstances"] == 3
    assert await cloud_instances(ec2) == {}


async def test_errors_and_logs_never_show_credentials(
    tmp_path: Path, proxy: AwsProxy, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key_id, secret = "AKIAQWERTYUIOPASDFGH", "wJalrXUtnFEMI-K7MDENG-bPxRfiCYzzzSECRET"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    proxy.fail(
        "RunInstances",
        "SignatureDoesNotMatch",
        f"The request signature does not match. Credential={key_id}/20261123/us-east-1/ec2 key {secret}",
        status=403,
    )
    caplog.set_level(logging.DEBUG, logger="pluginsdk")  # botocore's own DEBUG log shows the key id: docs/aws.md
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await _template(sdk)
        with pytest.raises(ProviderError) as err:
            await sdk.create_request("t", 1, request_id="req-sig")
        stored = await sdk.get_request("req-sig")
    ours = " ".join(r.getMessage() for r in caplog.records if r.name.startswith("pluginsdk"))
    shown = f"{err.value} {err.value.details} {stored.message} {ours}"
    assert err.value.details["provider_code"] == "SignatureDoesNotMatch"
    assert "signature does not match" in str(err.value)
    assert key_id not in shown and secret not in shown
