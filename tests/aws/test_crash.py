"""The engine is killed (SIGKILL) while AWS is launching; a new engine on the same store accounts for every instance."""

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
from tests.aws.conftest import AMI, aws_config, cloud_instances, subnets
from tests.aws.proxy import AwsProxy
from tests.aws.test_lifecycle import wait_return

RID = "req-00000000-0000-0000-0000-00000000c0de"
_LAUNCH = """
import asyncio, json, sys
from pluginsdk import PluginSDK
async def main():
    async with PluginSDK(config=json.loads(sys.argv[1])) as sdk:
        await sdk.create_request("t", int(sys.argv[2]), request_id=sys.argv[3], wait=True)
asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("api", "extra", "held"),
    [
        ("RunInstances", {}, "RunInstances"),
        ("EC2Fleet", {"fleet_type": "maintain"}, "CreateFleet"),
        ("SpotFleet", {"fleet_type": "maintain"}, "RequestSpotFleet"),
        ("ASG", {}, "CreateAutoScalingGroup"),
    ],
)
async def test_killed_mid_launch_then_reconciled(
    tmp_path: Path, proxy: AwsProxy, ec2: Any, autoscaling: Any, api: str, extra: dict[str, Any], held: str
) -> None:
    config = aws_config(tmp_path, proxy.url)
    nets = await subnets(ec2)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(
            template_id="t", image_id=AMI, provider_api=api, instance_type="t3.small", subnet_ids=nets[:2], **extra
        )
    hold = proxy.hold(held)  # AWS acts on the call; its answer never reaches the engine
    child = subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, json.dumps(config), "6", RID],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    try:
        assert await asyncio.to_thread(hold.forwarded.wait, 60), "the launch never reached AWS"
        await asyncio.sleep(0.3)  # the other subnet's share (RunInstances) lands too
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        hold.release.set()
    made = await cloud_instances(ec2, RID)
    assert len(made) == 6  # the dead engine launched them all

    async with PluginSDK(config=config) as sdk:
        before = await sdk.get_request(RID, lightweight=True)
        assert before.status is RequestStatus.PENDING and before.machine_ids == []  # the launch answer was lost
        after = await sdk.get_request(RID, long=True)
        assert after.status is RequestStatus.COMPLETED, after.message
        assert {m.machine_id for m in after.machines} == set(made)  # every instance adopted, none forgotten

        ret = await sdk.create_return_request(machine_ids=list(made))
        assert (await wait_return(sdk, ret.request_id)).status is RequestStatus.COMPLETED

    assert set((await cloud_instances(ec2)).values()) == {"terminated"}  # none leaked
    assert (await ec2.describe_launch_templates())["LaunchTemplates"] == []
    if api == "EC2Fleet":  # found by its tag although its id was never stored
        assert all(f["FleetState"].startswith("deleted") for f in (await ec2.describe_fleets())["Fleets"])
    if api == "SpotFleet":
        cfgs = (await ec2.describe_spot_fleet_requests())["SpotFleetRequestConfigs"]
        assert all(c["SpotFleetRequestState"].startswith("cancelled") for c in cfgs)
    if api == "ASG":
        assert (await autoscaling.describe_auto_scaling_groups())["AutoScalingGroups"] == []
