"""EC2 interruption events from an SQS queue: spot interruption warnings, rebalance recommendations,
instance state changes and AWS Health scheduled changes, as EventBridge delivers them
(docs/providers.md#interruptions-through-sqs).

An EventBridge rule sends the events to the queue a provider instance names (`interruption_queue_url`); each
reconcile pass receives what is there (long polling off by default: `interruption_wait_seconds`), turns
each event about an instance into the machine the driver reports as reclaimed, and deletes every message it
read — a malformed one too, after logging it, so it never blocks the queue. A machine an event says is being
stopped or hibernated is reported `stopping`/`stopped`: the driver terminates it (`AwsDriver.end_interrupted`)
once the engine knows it as its own, unless `interruption_keep_stopped` keeps it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pluginsdk.errors import ProviderError
from pluginsdk.models import MachineStatus

from ..base import ProvisionedMachine
from .client import AwsClients

__all__ = ["HEALTH", "REBALANCE", "STATE_CHANGE", "WARNING", "machines_of", "receive"]

log = logging.getLogger("pluginsdk.aws.interruptions")

WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE = "EC2 Instance State-change Notification"
HEALTH = "AWS Health Event"
_GONE_STATES = {
    "shutting-down": MachineStatus.SHUTTING_DOWN,
    "terminated": MachineStatus.TERMINATED,
    "stopping": MachineStatus.STOPPING,
    "stopped": MachineStatus.STOPPED,
}
_ACTIONS = {
    "terminate": MachineStatus.SHUTTING_DOWN,
    "stop": MachineStatus.STOPPING,
    "hibernate": MachineStatus.STOPPING,
}
"""A spot warning's `instance-action` -> the state it leaves the instance in."""
_BATCHES = 5
"""Most receive calls of one pass (10 messages each)."""


def _instance(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("i-") or len(value) > 64:
        raise ValueError("no instance id")
    return value


def machines_of(body: str) -> list[ProvisionedMachine]:
    """The machines an event is about, with their state and why; none for an event that reclaims nothing (a
    state change to pending or running). Raises ValueError for a message that is not such an event."""
    event = json.loads(body)
    if not isinstance(event, dict) or not isinstance(event.get("detail"), dict):
        raise ValueError("not an EventBridge event with a detail object")
    kind, detail = event.get("detail-type"), event["detail"]
    if kind == HEALTH:
        return _scheduled(detail)
    instance = _instance(detail.get("instance-id"))
    if kind == WARNING:
        action = str(detail.get("instance-action") or "terminate")
        acting = _ACTIONS.get(action, MachineStatus.SHUTTING_DOWN)
        return [ProvisionedMachine(instance, acting, reason=f"{WARNING} (instance-action {action[:20]})")]
    if kind == REBALANCE:
        return [ProvisionedMachine(instance, MachineStatus.RUNNING, reason=REBALANCE)]
    if kind == STATE_CHANGE:
        state = _GONE_STATES.get(str(detail.get("state")))
        return (
            [] if state is None else [ProvisionedMachine(instance, state, reason=f"{STATE_CHANGE} ({detail['state']})")]
        )
    raise ValueError(f"an event of another kind ({str(kind)[:80]!r})")


def _scheduled(detail: dict[str, Any]) -> list[ProvisionedMachine]:
    """An AWS Health event: a scheduled change of EC2 instances (a stop, a retirement, a maintenance reboot)
    names them in `affectedEntities`; they run until then, so they are reported running, to be returned. Other
    Health events reclaim nothing."""
    if detail.get("service") != "EC2" or detail.get("eventTypeCategory") != "scheduledChange":
        return []
    code = str(detail.get("eventTypeCode") or "scheduled change")[:80]
    entities = detail.get("affectedEntities")
    if not isinstance(entities, list):
        raise ValueError("no affectedEntities list in an EC2 scheduled change")
    instances = [
        str(e["entityValue"]) for e in entities[:1000] if isinstance(e, dict) and _is_instance(e.get("entityValue"))
    ]
    reason = f"{HEALTH} ({code})"
    return [ProvisionedMachine(i, MachineStatus.RUNNING, reason=reason) for i in instances]


def _is_instance(value: Any) -> bool:
    try:
        _instance(value)
    except ValueError:
        return False
    return True


async def receive(aws: AwsClients, queue_url: str, wait_seconds: int) -> list[ProvisionedMachine]:
    """The machines the queue's events are about; every message read is deleted."""
    found: list[ProvisionedMachine] = []
    for _ in range(_BATCHES):
        got = await aws.call(
            "sqs", "ReceiveMessage", QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds
        )
        messages: list[dict[str, Any]] = got.get("Messages") or []
        if not messages:
            break
        for msg in messages:
            try:
                found += machines_of(str(msg.get("Body") or ""))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning("dropped a malformed interruption message %s: %s", msg.get("MessageId"), exc)
        await _delete(aws, queue_url, messages)
        wait_seconds = 0  # the first call waited; the rest only drain
    return found


async def _delete(aws: AwsClients, queue_url: str, messages: list[dict[str, Any]]) -> None:
    entries = [{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)]
    try:
        await aws.call("sqs", "DeleteMessageBatch", QueueUrl=queue_url, Entries=entries)
    except ProviderError as exc:  # seen again after the visibility timeout, handled again (idempotent)
        log.warning("deleting interruption messages failed: %s", exc.message)
