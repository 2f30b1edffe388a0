"""AWS leaves nothing behind and says what happened: orphaned launch templates, capacity shortfalls,
spot reclaims as the scheduler sees them (moto on loopback)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from pluginsdk.models import RequestStatus
from tests.aws.conftest import AMI, REGION, aws_config, cloud_instances, subnets
from tests.aws.proxy import AwsProxy

RID = "req-00000000-0000-0000-0000-0000000071a7"
_LAUNCH = """
import asyncio, json, sys
from pluginsdk import PluginSDK
async def main():
    async with PluginSDK(config=json.loads(sys.argv[1])) as sdk:
        await sdk.create_request("t", 4, request_id=sys.argv[2], timeout=1)
asyncio.run(main())
"""


async def test_killed_between_launch_template_and_fleet_leaves_nothing(
    tmp_path: Path, proxy: AwsProxy, ec2: Any
) -> None:
    """The engine dies after CreateLaunchTemplate reached AWS and before CreateFleet: the template is tagged
    with the request, so once the request is over the reconciler removes it."""
    config = aws_config(tmp_path, proxy.url)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="EC2Fleet", instance_type="t3.small")
    hold = proxy.hold("CreateLaunchTemplate")
    child = subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, json.dumps(config), RID],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    try:
        assert await asyncio.to_thread(hold.forwarded.wait, 60), "the launch never reached AWS"
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        hold.release.set()
    (orphan,) = (await ec2.describe_launch_templates())["LaunchTemplates"]
    assert proxy.calls["CreateFleet"] == 0
    tags = (await ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [orphan["LaunchTemplateId"]]}]))["Tags"]
    assert {"Key": "pluginsdk:request-id", "Value": RID} in [{"Key": t["Key"], "Value": t["Value"]} for t in tags]

    await asyncio.sleep(1.2)  # the request's 1 s timeout passes with nothing launched
    async with PluginSDK(config=config) as sdk:
        after = await sdk.get_request(RID, long=True)
        assert after.status is RequestStatus.FAILED and after.machines == []
    assert (await ec2.describe_launch_templates())["LaunchTemplates"] == []
    assert await cloud_instances(ec2) == {}


async def test_cleanup_sweeps_orphaned_templates_of_finished_requests_only(
    tmp_path: Path, proxy: AwsProxy, ec2: Any
) -> None:
    config = aws_config(tmp_path, proxy.url)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="RunInstances", instance_type="t3.small")
        done = await sdk.create_request("t", 1, wait=True, timeout=30)
        ret = await sdk.create_return_request(machine_ids=[m.machine_id for m in done.machines])
        for _ in range(100):
            if (await sdk.get_request_status(ret.request_id)).requests[0].status.terminal:
                break
            await asyncio.sleep(0.1)

        def tagged(rid: str) -> list[dict[str, Any]]:
            return [{"ResourceType": "launch-template", "Tags": [{"Key": "pluginsdk:request-id", "Value": rid}]}]

        data = {"ImageId": AMI, "InstanceType": "t3.small"}
        await ec2.create_launch_template(LaunchTemplateName="left", LaunchTemplateData=data,
                                         TagSpecifications=tagged(done.request_id))  # fmt: skip
        await ec2.create_launch_template(LaunchTemplateName="foreign", LaunchTemplateData=data,
                                         TagSpecifications=tagged("req-of-another-deployment"))  # fmt: skip
        result = await sdk.cleanup_all_resources(older_than_days=30)
        assert "1 orphaned launch template." in result.message
    names = {t["LaunchTemplateName"] for t in (await ec2.describe_launch_templates())["LaunchTemplates"]}
    assert names == {"foreign"}  # another store's request: kept


async def test_capacity_shortfall_ends_partial_naming_the_cause(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    """Two subnet shares; the first three RunInstances calls find no capacity, so one share is launched after
    falling over to the other subnet and the other share fails everywhere: partial, not running until timeout."""
    nets = await subnets(ec2)
    proxy.fail("RunInstances", "InsufficientInstanceCapacity", "We currently do not have sufficient capacity.", times=3)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="RunInstances",
                                  instance_type="t3.small", subnet_ids=nets[:2])  # fmt: skip
        req = await sdk.create_request("t", 4, wait=True, timeout=60)
        assert req.status == "partial", req.message
        assert len(req.machines) == 2 and "InsufficientInstanceCapacity" in req.message
        stored = await sdk.get_request(req.request_id)
        assert stored.status is RequestStatus.PARTIAL and "2 could not start" in stored.message
    assert proxy.calls["RunInstances"] == 4


async def test_spot_reclaim_is_a_failed_machine_with_its_reason_for_the_scheduler(
    tmp_path: Path, proxy: AwsProxy
) -> None:
    from moto.backends import get_backend
    from moto.ec2.models.instances import StateReason

    from pluginsdk.schedulers import get_strategy
    from tests.schedulers.ibm_contract import validate

    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, provider_api="SpotFleet", instance_type="t3.small",
                                  fleet_type="request")  # fmt: skip
        req = await sdk.create_request("t", 2, wait=True, timeout=30)
        victim = req.machines[0]
        instance = get_backend("ec2")["123456789012"][REGION].get_instance(victim.machine_id)
        instance.terminate()
        instance.state_reason = StateReason(
            "Server.SpotInstanceTermination: Spot instance termination", "Server.SpotInstanceTermination"
        )
        listed = await sdk.list_return_requests(machine_names=[victim.name or victim.machine_id])
        status = await sdk.get_request_status([req.request_id])
        hf = get_strategy("hostfactory")
        out = hf.render("get_request_status", {}, status, sdk.settings)
        validate("hostfactory", "getRequestStatus", out)
        entry = next(m for m in out["requests"][0]["machines"] if m["machineId"] == victim.machine_id)
        assert entry["result"] == "fail" and "SpotInstanceTermination" in entry["message"]
        assert out["requests"][0]["status"] == "complete"  # the request was fulfilled; the loss is the machine's
        returns = hf.render("list_return_requests", {}, listed, sdk.settings)
        validate("hostfactory", "getReturnRequests", returns)
        assert returns["requests"] == [{"machine": victim.name or victim.machine_id, "gracePeriod": 0}]
