"""EC2 interruption events from an SQS queue: spot interruption warnings, rebalance recommendations and
instance state changes, as EventBridge delivers them (docs/providers.md#interruptions-through-sqs).

An EventBridge rule sends the events to the queue a provider instance names (`interruption_queue_url`); each
reconcile pass receives what is there (long polling off by default: `interruption_wait_seconds`), turns
each event about an instance into the machine the driver reports as reclaimed, and deletes every message it
read — a malformed one too, after logging it, so it never blocks the queue.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pluginsdk.errors import ProviderError
from pluginsdk.models import MachineStatus

from ..base import ProvisionedMachine
from .client import AwsClients

__all__ = ["REBALANCE", "STATE_CHANGE", "WARNING", "machine_of", "receive"]

log = logging.getLogger("pluginsdk.aws.interruptions")

WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE = "EC2 Instance State-change Notification"
_GONE_STATES = {
    "shutting-down": MachineStatus.SHUTTING_DOWN,
    "terminated": MachineStatus.TERMINATED,
    "stopping": MachineStatus.STOPPING,
    "stopped": MachineStatus.STOPPED,
}
_BATCHES = 5
"""Most receive calls of one pass (10 messages each)."""


def machine_of(body: str) -> ProvisionedMachine | None:
    """The machine an event is about, with its state and why; None for an event that reclaims nothing (a
    state change to pending or running). Raises ValueError for a message that is not such an event."""
    event = json.loads(body)
    if not isinstance(event, dict) or not isinstance(event.get("detail"), dict):
        raise ValueError("not an EventBridge event with a detail object")
    kind, detail = event.get("detail-type"), event["detail"]
    instance = detail.get("instance-id")
    if not isinstance(instance, str) or not instance.startswith("i-"):
        raise ValueError("no instance-id in its detail")
    if kind == WARNING:
        action = detail.get("instance-action") or "terminate"
        return ProvisionedMachine(instance, MachineStatus.SHUTTING_DOWN, reason=f"{WARNING} (instance-action {action})")
    if kind == REBALANCE:
        return ProvisionedMachine(instance, MachineStatus.RUNNING, reason=REBALANCE)
    if kind == STATE_CHANGE:
        state = _GONE_STATES.get(str(detail.get("state")))
        return (
            None if state is None else ProvisionedMachine(instance, state, reason=f"{STATE_CHANGE} ({detail['state']})")
        )
    raise ValueError(f"an event of another kind ({str(kind)[:80]!r})")


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
                pm = machine_of(str(msg.get("Body") or ""))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning("dropped a malformed interruption message %s: %s", msg.get("MessageId"), exc)
                continue
            if pm is not None:
                found.append(pm)
        await _delete(aws, queue_url, messages)
        wait_seconds = 0  # the first call waited; the rest only drain
    return found


async def _delete(aws: AwsClients, queue_url: str, messages: list[dict[str, Any]]) -> None:
    entries = [{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)]
    try:
        await aws.call("sqs", "DeleteMessageBatch", QueueUrl=queue_url, Entries=entries)
    except ProviderError as exc:  # seen again after the visibility timeout, handled again (idempotent)
        log.warning("deleting interruption messages failed: %s", exc.message)
