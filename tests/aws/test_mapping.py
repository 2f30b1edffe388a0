"""Template fields arrive at AWS as docs/aws.md says (checked on what moto recorded)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from pluginsdk.errors import InvalidTemplateError, ProviderError
from tests.aws.conftest import AMI, aws_config, subnets
from tests.aws.proxy import AwsProxy


async def test_ec2_fleet_heterogeneous_capacity_and_strategy(tmp_path: Path, proxy: AwsProxy, ec2: Any) -> None:
    nets = await subnets(ec2)
    async with PluginSDK(config=aws_config(tmp_path, proxy.url)) as sdk:
        await sdk.create_template(
            template_id="t",
            image_id=AMI,
            provider_api="EC2Fleet",
            fleet_type="request",
            instance_types={"t3.small": 1, "t3.medium": 1},
            subnet_ids=nets[:2],
            price_type="heterogeneous",
            allocation_strategy="capacityOptimized",
            configuration={"on_demand_percent": 25},
            key_name="hpc",
            user_data="#!/bin/sh\necho hi\n",
        )
        req = await sdk.create_request("t", 4)
    fleet = (await ec2.describe_fleets())["Fleets"][0]
    assert fleet["Type"] == "request"
    assert fleet["TargetCapacitySpecification"]["TotalTargetCapacity"] == 4
    assert fleet["TargetCapacitySpecification"]["OnDemandTargetCapacity"] == 1
    assert fleet["SpotOptions"]["AllocationStrategy"] == "capacity-optimized"
    overrides = fleet["LaunchTemplateConfigs"][0]["Overrides"]
    assert {(o["InstanceType"], o["SubnetId"]) for o in overrides} == {
        (t, n) for t in ("t3.small", "t3.medium") for n in nets[:2]
    }
    assert {"Key": "pluginsdk:request-id", "Value": req.request_id} in fleet["Tags"]
    lt = await ec2.describe_launch_template_versions(LaunchTemplateName=f"pluginsdk-{req.request_id}")
    data = lt["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["ImageId"] == AMI and data["KeyName"] == "hpc"
    assert base64.b64decode(data["UserData"]).decode() == "#!/bin/sh\necho hi\n"


async def test_bad_fleet_type_and_missing_fleet_role_fail_before_any_call(tmp_path: Path, proxy: AwsProxy) -> None:
    config = aws_config(tmp_path, proxy.url)
    config["provider"]["aws"].pop("fleet_role")
    async with PluginSDK(config=config) as sdk:
        with pytest.raises(InvalidTemplateError):
            await sdk.create_template(template_id="f", image_id=AMI, provider_api="EC2Fleet", fleet_type="forever")
        files = tmp_path / "templates"
        files.mkdir()
        bad_kind = {"template_id": "f", "image_id": AMI, "provider_api": "EC2Fleet", "fleet_type": "forever"}
        (files / "f.json").write_text(json.dumps(bad_kind))
    config["templates"] = {"dir": str(files)}  # files are not validated on load: the driver still refuses
    async with PluginSDK(config=config) as sdk:
        with pytest.raises(ProviderError) as bad:
            await sdk.create_request("f", 1, request_id="req-bad-kind")
        assert bad.value.details["field"] == "fleet_type"
        assert (await sdk.get_request("req-bad-kind")).status == "failed"
        await sdk.create_template(template_id="s", image_id=AMI, provider_api="SpotFleet")
        with pytest.raises(ProviderError) as role:
            await sdk.create_request("s", 1)
        assert role.value.details["provider_code"] == "MissingFleetRole"
    assert proxy.total() == 0
