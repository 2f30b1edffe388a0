"""Returning part of a fleet or group shrinks it, so nothing replaces the returned machines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from pluginsdk.models import RequestStatus
from tests.aws.conftest import AMI, aws_config, cloud_instances
from tests.aws.proxy import AwsProxy
from tests.aws.test_lifecycle import wait_return


async def _provision(sdk: PluginSDK, api: str, count: int, **extra: Any) -> Any:
    await sdk.create_template(template_id="t", image_id=AMI, provider_api=api, instance_type="t3.small", **extra)
    req = await sdk.create_request("t", count, wait=True, timeout=30)
    assert req.status == "completed", req.message
    return req


async def test_partial_asg_return_shrinks_the_group(
    tmp_path: Path, proxy: AwsProxy, ec2: Any, autoscaling: Any
) -> None:
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        req = await _provision(sdk, "ASG", 4)
        doomed = [m.machine_id for m in req.machines[:3]]
        ret = await sdk.create_return_request(machine_ids=doomed)
        assert (await wait_return(sdk, ret.request_id)).status is RequestStatus.COMPLETED
        group = (await autoscaling.describe_auto_scaling_groups())["AutoScalingGroups"][0]
        assert group["DesiredCapacity"] == 1
        assert [i["InstanceId"] for i in group["Instances"]] == [req.machines[3].machine_id]
        cloud = await cloud_instances(ec2)
        assert {cloud[i] for i in doomed} == {"terminated"}
        assert cloud[req.machines[3].machine_id] == "running"
        assert proxy.calls["DetachInstances"] == 1  # 3 ids in one call (up to 20 per call)

        last = await sdk.create_return_request(machine_ids=[req.machines[3].machine_id])
        assert (await wait_return(sdk, last.request_id)).status is RequestStatus.COMPLETED
        assert (await autoscaling.describe_auto_scaling_groups())["AutoScalingGroups"] == []


async def test_partial_spot_fleet_maintain_return_lowers_the_target(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        req = await _provision(sdk, "SpotFleet", 4, fleet_type="maintain")
        doomed = [m.machine_id for m in req.machines[:2]]
        ret = await sdk.create_return_request(machine_ids=doomed)
        assert (await wait_return(sdk, ret.request_id)).status is RequestStatus.COMPLETED
        cfg = (await ec2.describe_spot_fleet_requests())["SpotFleetRequestConfigs"][0]
        assert cfg["SpotFleetRequestConfig"]["TargetCapacity"] == 2
        assert cfg["SpotFleetRequestState"] == "active"
        active = await ec2.describe_spot_fleet_instances(SpotFleetRequestId=cfg["SpotFleetRequestId"])
        assert sorted(i["InstanceId"] for i in active["ActiveInstances"]) == sorted(
            m.machine_id for m in req.machines[2:]
        )


async def test_partial_request_fleet_return_terminates_only_those(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        req = await _provision(sdk, "EC2Fleet", 3, fleet_type="request")
        ret = await sdk.create_return_request(machine_ids=[req.machines[0].machine_id])
        assert (await wait_return(sdk, ret.request_id)).status is RequestStatus.COMPLETED
        cloud = await cloud_instances(ec2)
        assert cloud[req.machines[0].machine_id] == "terminated"
        assert [cloud[m.machine_id] for m in req.machines[1:]] == ["running", "running"]
        assert proxy.calls["ModifyFleet"] == 0 and proxy.calls["DeleteFleets"] == 0


async def test_partial_maintain_ec2_fleet_return_needs_modify_fleet(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    """moto has no ModifyFleet: the driver must then refuse, not terminate machines the fleet would replace;
    the return ends failed at once and the machine is returnable again (not owned by a stuck return)."""
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        req = await _provision(sdk, "EC2Fleet", 3, fleet_type="maintain")
        victim = req.machines[0].machine_id
        ret = await sdk.create_return_request(machine_ids=[victim])
        assert ret.processed_machines == [] and "failed to take back 1" in ret.message
        (status,) = (await sdk.get_request_status([ret.request_id])).requests
        assert status.status == "failed" and status.machines == []
        assert status.provider_data["failed_machines"][victim]["reason"]
        assert (await sdk.get_machine(victim)).return_request_id is None
        assert proxy.calls["ModifyFleet"] >= 1 and proxy.calls["TerminateInstances"] == 0
        assert set((await cloud_instances(ec2)).values()) == {"running"}
