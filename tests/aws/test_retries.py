"""botocore's retry modes do the retrying; we count attempts and throttles through its public events.

Against moto behind the loopback proxy, which answers AWS's own throttling and 5xx errors a few times.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from pluginsdk.errors import ConfigurationError
from tests.aws.conftest import AMI, aws_config
from tests.aws.proxy import AwsProxy
from tests.scale.test_operator import admin_key, counter, server


@pytest.mark.parametrize("mode", ["standard", "adaptive"])
async def test_botocore_retries_throttling_and_we_count_every_attempt(
    tmp_path: Path, proxy: AwsProxy, mode: str
) -> None:
    proxy.fail("RunInstances", "ThrottlingException", "Rate exceeded", times=2)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url, retry_mode=mode)) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="RunInstances", instance_type="t3.small")
        req = await sdk.create_request("t", 2, wait=True, timeout=60)
        assert req.status == "completed", req.message
        health = await sdk.get_provider_health(detailed=True)
        assert health.details["throttled"] == 2
        assert health.details["api_calls"] == sum(proxy.calls.values())  # every attempt, as the wire saw them
    assert proxy.calls["RunInstances"] == 3


async def test_transient_server_errors_are_retried_and_are_not_throttles(tmp_path: Path, proxy: AwsProxy) -> None:
    proxy.fail("DescribeAvailabilityZones", "InternalError", "We encountered an internal error.", status=500, times=2)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        health = await sdk.get_provider_health(detailed=True)
        assert health.healthy, health.details
        assert health.details["throttled"] == 0
    assert proxy.calls["DescribeAvailabilityZones"] == 3


@pytest.mark.parametrize(
    ("setting", "key"),
    [({"retry_mode": "sometimes"}, "provider.aws.retry_mode"), ({"retry_base_delay": 0.01}, "provider.aws.")],
)
async def test_retry_settings_are_botocores_and_a_retired_one_is_an_error(
    tmp_path: Path, proxy: AwsProxy, setting: dict[str, object], key: str
) -> None:
    with pytest.raises(ConfigurationError) as err:
        async with PluginSDK(config=aws_config(tmp_path, proxy.url, **setting)) as sdk:
            await sdk.get_provider_health()
    assert str(err.value.details.get("key", "")).startswith(key) or key in str(err.value)
    assert proxy.total() == 0


async def test_retried_throttles_reach_the_servers_metrics(tmp_path: Path, proxy: AwsProxy) -> None:
    """A server with the aws provider: throttled attempts botocore retried show in
    pluginsdk_provider_throttles_total by API operation, though the launch itself succeeded."""
    config = aws_config(tmp_path, proxy.url)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="RunInstances", instance_type="t3.small")
    key = await admin_key(config)
    proxy.fail("RunInstances", "RequestLimitExceeded", "Request limit exceeded.", status=503, times=2)
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient(headers={"Authorization": key}) as c:
        made = await c.post(f"{url}/api/v1/machines/request", json={"template_id": "t", "requested_count": 1})
        assert made.status_code in (200, 201, 202), made.text
        rid = made.json()["requestId"]
        deadline = time.monotonic() + 60
        while (state := (await c.get(f"{url}/api/v1/requests/{rid}")).json())["status"] != "completed":
            assert time.monotonic() < deadline, state
            await asyncio.sleep(0.2)
        text = (await c.get(f"{url}/metrics")).text
    assert counter(text, "pluginsdk_provider_throttles_total", provider="aws", operation="RunInstances") == 2
    assert counter(text, "pluginsdk_provider_errors_total", provider="aws", operation="launch") == 0
    assert proxy.calls["RunInstances"] == 3


async def test_a_group_made_by_an_attempt_whose_answer_was_lost_is_adopted(tmp_path: Path, proxy: AwsProxy) -> None:
    """CreateAutoScalingGroup takes no ClientToken: AWS made the group, the answer was a 500, botocore asked
    again and heard AlreadyExists. The group is named for the request, so it is this request's."""
    proxy.fail("CreateAutoScalingGroup", "InternalFailure", "Internal failure.", status=500, after=True)
    # what AWS answers the repeat (moto would make a second group of the same name instead)
    proxy.fail("CreateAutoScalingGroup", "AlreadyExists", "AutoScalingGroup by this name already exists.")
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="ASG", instance_type="t3.small")
        req = await sdk.create_request("t", 2, wait=True, timeout=60)
        assert req.status == "completed", req.message
        assert len(req.machines) == 2
    assert proxy.calls["CreateAutoScalingGroup"] == 2
