"""Every provider API through request → running → return against moto's server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from pluginsdk.models import RequestStatus
from tests.aws.conftest import AMI, aws_config, cloud_instances, subnets
from tests.aws.proxy import AwsProxy

CASES = [
    pytest.param("RunInstances", {}, id="RunInstances"),
    pytest.param("aws", {"price_type": "spot"}, id="aws-alias-spot"),
    pytest.param("EC2Fleet", {"fleet_type": "instant"}, id="EC2Fleet-instant"),
    pytest.param("EC2Fleet", {"fleet_type": "request", "price_type": "spot"}, id="EC2Fleet-request"),
    pytest.param("EC2Fleet", {"fleet_type": "maintain"}, id="EC2Fleet-maintain"),
    pytest.param("SpotFleet", {"fleet_type": "request"}, id="SpotFleet-request"),
    pytest.param("SpotFleet", {"fleet_type": "maintain"}, id="SpotFleet-maintain"),
    pytest.param("ASG", {}, id="ASG"),
]


async def wait_return(sdk: PluginSDK, ret_id: str, seconds: float = 10) -> Any:
    for _ in range(int(seconds / 0.05)):
        r = await sdk.get_request(ret_id, long=True)
        if r.status.terminal:
            return r
        await asyncio.sleep(0.05)
    raise AssertionError(f"return {ret_id} did not finish: {r.status} {r.message}")


@pytest.mark.parametrize(("api", "extra"), CASES)
async def test_request_running_return(
    tmp_path: Path, proxy: AwsProxy, ec2: Any, autoscaling: Any, api: str, extra: dict[str, Any]
) -> None:
    nets = await subnets(ec2)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(
            template_id="t",
            image_id=AMI,
            provider_api=api,
            instance_type="t3.small",
            subnet_ids=nets[:2],
            tags={"team": "hpc"},
            user_data="#!/bin/sh\necho hi\n",
            **extra,
        )
        req = await sdk.create_request("t", 5, wait=True, timeout=30)
        assert req.status == "completed", req.message
        assert len(req.machines) == 5
        assert {m.status.value for m in req.machines} == {"running"}
        assert all(m.ip_address and m.instance_type == "t3.small" for m in req.machines)

        cloud = await cloud_instances(ec2, req.request_id)
        assert set(cloud) == {m.machine_id for m in req.machines}  # tagged with the request id, none extra
        assert set(cloud.values()) == {"running"}
        desc = await ec2.describe_instances(InstanceIds=list(cloud))
        tags = {t["Key"]: t["Value"] for t in desc["Reservations"][0]["Instances"][0]["Tags"]}
        assert tags["team"] == "hpc"
        if api in ("RunInstances", "aws"):  # moto fleets use only the first subnet override
            used = {i["SubnetId"] for r in desc["Reservations"] for i in r["Instances"]}
            assert used == set(nets[:2])

        ret = await sdk.create_return_request(machine_ids=[m.machine_id for m in req.machines])
        done = await wait_return(sdk, ret.request_id)
        assert done.status is RequestStatus.COMPLETED, done.message
        assert {m.status.value for m in done.machines} == {"terminated"}

    assert set((await cloud_instances(ec2)).values()) == {"terminated"}  # nothing leaked
    lts = await ec2.describe_launch_templates()
    assert lts["LaunchTemplates"] == []  # fleets' and groups' launch templates cleaned up
    if api == "ASG":
        groups = await autoscaling.describe_auto_scaling_groups()
        assert groups["AutoScalingGroups"] == []
    if api == "EC2Fleet":
        fleets = (await ec2.describe_fleets())["Fleets"]
        assert all(f["FleetState"].startswith("deleted") for f in fleets)
    if api == "SpotFleet":
        cfgs = (await ec2.describe_spot_fleet_requests())["SpotFleetRequestConfigs"]
        assert all(c["SpotFleetRequestState"].startswith("cancelled") for c in cfgs)
