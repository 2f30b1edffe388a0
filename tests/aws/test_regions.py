"""Two AWS provider instances (two regions of moto on loopback) as candidates of one template.

The capacity errors are AWS's own answers (the proxy returns them as EC2 does), so the engine classifies the
real botocore ClientError shapes, not a stand-in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK, ProviderError
from tests.aws.conftest import AMI, aws_config, cloud_instances
from tests.aws.proxy import AwsProxy


def _two_regions(tmp_path: Path, endpoint: str) -> dict[str, Any]:
    config = aws_config(tmp_path, endpoint)
    common = {"type": "aws", "endpoint_url": endpoint, "max_attempts": 1}
    config["provider"]["instances"] = {
        "aws-east": {**common, "region": "us-east-1"},
        "aws-west": {**common, "region": "us-west-2"},
    }
    return config


@pytest.fixture
async def west(moto_url: str) -> AsyncIterator[Any]:
    from aiobotocore.session import get_session

    async with get_session().create_client("ec2", region_name="us-west-2", endpoint_url=moto_url) as client:
        yield client


async def _template(sdk: PluginSDK) -> None:
    await sdk.create_template(
        template_id="t",
        image_id=AMI,
        provider_api="RunInstances",
        instance_type="t3.small",
        offerings=[{"provider": "aws-east"}, {"provider": "aws-west"}],
    )


@pytest.mark.parametrize("code", ["InsufficientInstanceCapacity", "Unsupported", "MaxSpotInstanceCountExceeded"])
async def test_a_capacity_error_in_one_region_launches_in_the_next(
    tmp_path: Path, proxy: AwsProxy, ec2: Any, west: Any, code: str
) -> None:
    proxy.fail("RunInstances", code, "We currently do not have sufficient capacity in the zone you requested.")
    async with PluginSDK(config=_two_regions(tmp_path, proxy.url)) as sdk:
        await _template(sdk)
        created = await sdk.create_request("t", 2, wait=True, timeout=60)
        assert created.status == "completed", created.message
        r = await sdk.get_request(created.request_id or "", long=True)
        assert {m.provider_name for m in r.machines} == {"aws-west"}
        east, second = r.provider_data["attempts"]
        assert (east["provider"], east["outcome"], second["provider"]) == ("aws-east", "capacity", "aws-west")
        assert code in east["reason"]
        status = await sdk.get_providers_status()
        assert {o.key: o.state for o in status.offerings} == {"aws-east/t3.small/*/ondemand": "cooling"}
        assert len(await cloud_instances(west, second["launch_id"])) == 2
        assert await cloud_instances(ec2) == {}  # nothing started in the region that refused
        ret = await sdk.create_return_request([m.machine_id for m in r.machines])
        await sdk.get_request(ret.request_id or "", long=True)
    assert set((await cloud_instances(west)).values()) <= {"shutting-down", "terminated"}
    assert proxy.calls["RunInstances"] == 2  # one refused in the east, one served in the west


async def test_an_error_that_is_not_capacity_is_recorded_and_not_cooled_down(
    tmp_path: Path, proxy: AwsProxy, ec2: Any, west: Any
) -> None:
    proxy.fail("RunInstances", "UnauthorizedOperation", "You are not authorized to perform this operation.", times=2)
    async with PluginSDK(config=_two_regions(tmp_path, proxy.url)) as sdk:
        await _template(sdk)
        with pytest.raises(ProviderError, match="UnauthorizedOperation"):
            await sdk.create_request("t", 1)
        assert (await sdk.get_providers_status()).offerings == []  # only capacity failures cool a candidate
