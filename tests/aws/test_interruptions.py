"""EC2 interruption events through SQS (moto on loopback): EventBridge's spot interruption warning, rebalance
recommendation and state-change events reach the machines, the request's record and getReturnRequests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiobotocore")
pytest.importorskip("moto.server")

from pluginsdk import PluginSDK
from pluginsdk.models import MachineStatus
from tests.aws.conftest import AMI, REGION, aws_config, cloud_instances
from tests.aws.proxy import AwsProxy


def event(kind: str, detail: dict[str, Any]) -> str:
    """An event as EventBridge delivers it to an SQS target (the message body)."""
    return json.dumps(
        {
            "version": "0",
            "id": "7bf73129-1428-4cd3-a780-95db273d1602",
            "detail-type": kind,
            "source": "aws.ec2",
            "account": "123456789012",
            "time": "2026-11-27T10:00:00Z",
            "region": REGION,
            "resources": [f"arn:aws:ec2:{REGION}a:instance/{detail['instance-id']}"],
            "detail": detail,
        }
    )


@pytest.fixture
async def sqs(moto_url: str) -> AsyncIterator[Any]:
    from aiobotocore.session import get_session

    async with get_session().create_client("sqs", region_name=REGION, endpoint_url=moto_url) as client:
        yield client


async def test_interruption_events_reach_the_machines_and_the_schedulers(
    tmp_path: Path, proxy: AwsProxy, sqs: Any, ec2: Any
) -> None:
    from pluginsdk.schedulers import get_strategy
    from tests.schedulers.ibm_contract import validate

    queue = (await sqs.create_queue(QueueName="interruptions"))["QueueUrl"]
    config = aws_config(tmp_path, proxy.url, interruption_queue_url=queue)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, instance_type="t3.small", price_type="spot")
        req = await sdk.create_request("t", 3, wait=True, timeout=30)
        warned, rebalanced, steady = (m.machine_id for m in req.machines)
        names = {m.machine_id: m.name or m.machine_id for m in req.machines}
        for body in (
            event("EC2 Spot Instance Interruption Warning", {"instance-id": warned, "instance-action": "terminate"}),
            event("EC2 Instance Rebalance Recommendation", {"instance-id": rebalanced}),
            event("EC2 Instance State-change Notification", {"instance-id": steady, "state": "running"}),
            event("EC2 Instance Rebalance Recommendation", {"instance-id": "i-0123456789abcdef0"}),  # not ours
            "{not json",
            json.dumps({"detail-type": "EC2 Spot Instance Interruption Warning", "detail": {}}),
            json.dumps(["a", "list"]),
        ):
            await sqs.send_message(QueueUrl=queue, MessageBody=body)

        listed = await sdk.list_return_requests()
        assert {r.created_by for r in listed.requests} == {"provider"}
        assert sorted(mid for r in listed.requests for mid in r.machine_ids) == sorted([warned, rebalanced])
        for scheduler in ("hostfactory", "lsf"):
            out = get_strategy(scheduler).render("list_return_requests", {}, listed, sdk.settings)
            validate(scheduler, "getReturnRequests", out)
            assert sorted(r["machine"] for r in out["requests"]) == sorted([names[warned], names[rebalanced]])
        left = await sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])
        assert left["Attributes"]["ApproximateNumberOfMessages"] == "0"  # handled and malformed alike deleted
        assert left["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0"

        record = {m.machine_id: m for m in (await sdk.get_request(req.request_id or "", long=True)).machines}
        assert record[warned].status is MachineStatus.TERMINATED
        assert "EC2 Spot Instance Interruption Warning" in (record[warned].status_reason or "")
        assert record[rebalanced].status is MachineStatus.RUNNING  # still up: the scheduler returns it
        assert "EC2 Instance Rebalance Recommendation" in (record[rebalanced].status_reason or "")
        assert record[steady].return_request_id is None
        assert (await sdk.list_return_requests()).total_count == listed.total_count  # each reported once

        returned = await sdk.create_return_request([rebalanced])  # what the scheduler does next
        assert returned.processed_machines == [rebalanced]
        assert (await cloud_instances(ec2))[rebalanced] in ("shutting-down", "terminated")


def health(code: str, instances: list[str]) -> str:
    """An AWS Health scheduled change of EC2 instances, as EventBridge delivers it to an SQS target."""
    return json.dumps(
        {
            "version": "0", "id": "4c5a8e2b-1b1e-4f36-9f0a-0d1c2b3a4e5f", "detail-type": "AWS Health Event",
            "source": "aws.health", "account": "123456789012", "time": "2026-11-27T10:00:00Z", "region": REGION,
            "resources": instances,
            "detail": {
                "eventArn": f"arn:aws:health:{REGION}::event/EC2/{code}/1", "service": "EC2",
                "eventTypeCode": code, "eventTypeCategory": "scheduledChange",
                "affectedEntities": [{"entityValue": i} for i in instances],
            },
        }
    )  # fmt: skip


async def test_an_instance_stopped_by_its_interruption_ends_terminated(
    tmp_path: Path, proxy: AwsProxy, sqs: Any, ec2: Any
) -> None:
    """Each kind: a `stopped` state change, a warning whose action is stop or hibernate, a Health scheduled
    change (running until then: listed for return, and terminated when the stop comes). An instance not ours,
    named by the same events, is left alone."""
    queue = (await sqs.create_queue(QueueName="interruptions"))["QueueUrl"]
    config = aws_config(tmp_path, proxy.url, interruption_queue_url=queue)
    foreign = (await ec2.run_instances(ImageId=AMI, MinCount=1, MaxCount=1))["Instances"][0]["InstanceId"]
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, instance_type="t3.small", price_type="spot")
        req = await sdk.create_request("t", 4, wait=True, timeout=30)
        stopped, stop, hibernate, scheduled = (m.machine_id for m in req.machines)
        await ec2.stop_instances(InstanceIds=[stopped, foreign])  # AWS stopped them (stop behaviour)
        for body in (
            event("EC2 Instance State-change Notification", {"instance-id": stopped, "state": "stopped"}),
            event("EC2 Instance State-change Notification", {"instance-id": foreign, "state": "stopped"}),
            event("EC2 Spot Instance Interruption Warning", {"instance-id": stop, "instance-action": "stop"}),
            event("EC2 Spot Instance Interruption Warning", {"instance-id": hibernate, "instance-action": "hibernate"}),
            health("AWS_EC2_INSTANCE_STOP_SCHEDULED", [scheduled, foreign]),
        ):
            await sqs.send_message(QueueUrl=queue, MessageBody=body)
        await sdk.list_return_requests()
        cloud = await cloud_instances(ec2)
        for mid in (stopped, stop, hibernate):
            assert cloud[mid] in ("shutting-down", "terminated"), mid
        assert cloud[scheduled] == "running" and cloud[foreign] == "stopped"  # not ours: untouched
        record = {m.machine_id: m for m in (await sdk.get_request(req.request_id or "", long=True)).machines}
        assert "(stopped); terminated" in (record[stopped].status_reason or "")
        assert "(instance-action hibernate); terminated" in (record[hibernate].status_reason or "")
        assert record[scheduled].status is MachineStatus.RUNNING
        assert "AWS Health Event (AWS_EC2_INSTANCE_STOP_SCHEDULED)" in (record[scheduled].status_reason or "")
        assert {r.status.gone for r in record.values() if r.machine_id != scheduled} == {True}
        # the scheduled stop comes: the machine, still under the provider's return, ends terminated too
        await ec2.stop_instances(InstanceIds=[scheduled])
        stop_event = event("EC2 Instance State-change Notification", {"instance-id": scheduled, "state": "stopped"})
        await sqs.send_message(QueueUrl=queue, MessageBody=stop_event)
        await sdk.list_return_requests()
        assert (await cloud_instances(ec2))[scheduled] in ("shutting-down", "terminated")
        again = await sdk.get_machine(scheduled)
        assert again.status is MachineStatus.TERMINATED and "(stopped); terminated" in (again.status_reason or "")


async def test_interruption_keep_stopped_keeps_the_instance_and_shows_it(
    tmp_path: Path, proxy: AwsProxy, sqs: Any, ec2: Any
) -> None:
    queue = (await sqs.create_queue(QueueName="interruptions"))["QueueUrl"]
    config = aws_config(tmp_path, proxy.url, interruption_queue_url=queue, interruption_keep_stopped=True)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="t", image_id=AMI, instance_type="t3.small", price_type="spot")
        req = await sdk.create_request("t", 1, wait=True, timeout=30)
        (kept,) = (m.machine_id for m in req.machines)
        await ec2.stop_instances(InstanceIds=[kept])
        body = event("EC2 Instance State-change Notification", {"instance-id": kept, "state": "stopped"})
        await sqs.send_message(QueueUrl=queue, MessageBody=body)
        (listed,) = (await sdk.list_return_requests()).requests
        assert listed.machine_ids == [kept] and listed.created_by == "provider"
        assert (await cloud_instances(ec2))[kept] == "stopped"  # kept, by the setting
        machine = await sdk.get_machine(kept)
        assert machine.status is MachineStatus.STOPPED
        assert "kept stopped (interruption_keep_stopped)" in (machine.status_reason or "")
        returned = await sdk.create_return_request([kept])  # the scheduler returns it: then it goes
        assert returned.processed_machines == [kept]
        assert (await cloud_instances(ec2))[kept] in ("shutting-down", "terminated")
