"""`pluginsdk slurm reconcile`: repair what the controller and the engine disagree on.

The cases, each with what it is seen as and its repair (docs/schedulers.md has the same table):
- *powered up without a machine*: Slurm holds the node up (none of POWERED_DOWN, POWERING_DOWN, DOWN, nor
  POWERING_UP or REBOOT_ISSUED: a launch the worker may not have made yet, which ResumeTimeout bounds), and no
  active machine is named after it -> the node goes DOWN with the reason (its job is requeued); when the
  provider took its machine back (a spot interruption, a rebalance recommendation), the reason is the
  provider's, as the machine records it.
- *machine for a powered-down node*: an active machine named after a node Slurm holds POWERED_DOWN or
  POWERING_DOWN -> the machine is returned.
- *machine for an unknown node*: the controller does not know the node -> the machine is returned.
- *never registered*: the node is POWERING_UP or NOT_RESPONDING and its machine was launched longer than the
  registration timeout ago -> the machine is returned and the node goes DOWN with the reason.

Machines not named after a configured node are not Slurm's and are never touched. Every repair is one line
of JSON on stdout (`node`, `machine`, `case`, `action`). It runs as a command (`pluginsdk slurm reconcile`,
through the SDK) and as a periodic task (`reconcile_task`) that a long-lived process — the REST server,
`pluginsdk worker` — registers with its engine, every `slurm.reconcile_interval` seconds: both hand it their
way to run an operation.

Readiness: a node the controller holds registered (slurmd answered: none of POWERING_UP, NOT_RESPONDING,
DOWN, POWERED_DOWN) has its machine marked ready (`mark_machine_ready`), so a template that requires a
readiness signal (`configuration.boot`) needs no startup script calling `machines ready`: slurmd's own
registration is the signal. Only machines launched within the registration window are marked (a node
registers within ResumeTimeout or Slurm fails it), so a pass costs nothing for the nodes long up.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .nodes import NodeMap
from .scontrol import Node, Scontrol

if TYPE_CHECKING:
    from ...config import Settings, SlurmSettings
    from ...models import Machine
    from ...periodic import PeriodicTask

__all__ = ["reconcile", "reconcile_task"]

Execute = Callable[[Any], Awaitable[Any]]
"""Runs one catalog operation (`PluginSDK.execute`, or the engine's `execute` as its administrator)."""

READY_SLACK = 300.0
"""Seconds past the registration timeout a machine's node may still be seen registering for the first time
(the reconcile runs every `slurm.reconcile_interval`, or from cron)."""

LOST = "powered up without a machine"

log = logging.getLogger("pluginsdk.schedulers.slurm")


async def _machines(execute: Execute, known: dict[str, str]) -> dict[str, Machine]:
    """The active machines named after a configured node and in no return, by node name."""
    from ...operations import ListMachinesQuery

    found: dict[str, Machine] = {}
    offset = 0
    while True:
        page = await execute(ListMachinesQuery(active_only=True, limit=1000, offset=offset))
        for machine in page.machines:
            if machine.name in known and machine.return_request_id is None:
                found.setdefault(machine.name, machine)
        offset += len(page.machines)
        if not page.machines or offset >= page.total_count:
            return found


async def _reclaimed(execute: Execute, names: set[str]) -> dict[str, str]:
    """Node name -> why the provider took its machine back, from the newest machines named after the nodes."""
    from ...models import StatusReason
    from ...operations import ListMachinesQuery

    if not names:
        return {}
    found: dict[str, str] = {}
    for machine in (await execute(ListMachinesQuery(limit=1000))).machines:
        why = machine.status_reason or ""
        if machine.name in names and machine.name not in found:
            found[machine.name] = why
    return {name: why for name, why in found.items() if why.startswith(StatusReason.RECLAIMED)}


@dataclass
class _Plan:
    """What one pass found: the repairs to print, nodes to put down by reason, machines to return, machines of
    registered nodes to mark ready."""

    fixes: list[dict[str, str]] = field(default_factory=list)
    down: dict[str, list[str]] = field(default_factory=dict)
    give_back: list[Machine] = field(default_factory=list)
    registered: list[Machine] = field(default_factory=list)


def _plan(known: Iterable[str], nodes: dict[str, Node], machines: dict[str, Machine], timeout: float) -> _Plan:
    """Each configured node's case of the table (module docstring)."""
    now = datetime.now(UTC)
    plan = _Plan()
    for name in known:
        node, machine = nodes.get(name), machines.get(name)
        if machine is None:
            if node is not None and node.powered_up and not node.state & {"DOWN", "POWERING_UP", "REBOOT_ISSUED"}:
                plan.down.setdefault(LOST, []).append(name)
                plan.fixes.append({"node": name, "case": LOST, "action": "down"})
            continue
        if node is None or not node.powered_up:
            plan.give_back.append(machine)
            case = "machine for an unknown node" if node is None else "machine for a powered-down node"
            plan.fixes.append({"node": name, "machine": machine.machine_id, "case": case, "action": "return"})
            continue
        age = (now - machine.created_at).total_seconds()
        if node.registered and age <= timeout + READY_SLACK:
            plan.registered.append(machine)
        if not node.registered and age > timeout:
            plan.give_back.append(machine)
            plan.down.setdefault(f"did not register within {timeout:.0f} s", []).append(name)
            plan.fixes.append(
                {"node": name, "machine": machine.machine_id, "case": "never registered", "action": "return, down"}
            )
    return plan


async def reconcile(execute: Execute, settings: SlurmSettings, registration_timeout: float) -> list[dict[str, str]]:
    """Compare the controller's nodes with the machines, repair each case of the table; the repairs."""
    from ...operations import CreateReturnRequestCommand

    known = NodeMap(settings).template
    scontrol = Scontrol(settings.scontrol)
    nodes = await scontrol.nodes()
    plan = _plan(known, nodes, await _machines(execute, known), registration_timeout)
    lost = plan.down.pop(LOST, [])
    taken = await _reclaimed(execute, set(lost))
    for name in lost:
        plan.down.setdefault(taken.get(name, LOST), []).append(name)
    for reason, names in plan.down.items():
        await scontrol.down(names, reason)
    if plan.give_back:
        machine_ids = [m.machine_id for m in plan.give_back]
        await execute(CreateReturnRequestCommand(machine_ids=machine_ids, force_return=True))
    await _ready(execute, plan.registered)
    return plan.fixes


async def _ready(execute: Execute, machines: list[Machine]) -> None:
    """Mark the machines of registered nodes ready (idempotent: a machine marked already stays as it is)."""
    from ...errors import SDKError
    from ...operations.machine_signals import MarkMachineReadyCommand

    for machine in machines:
        try:
            await execute(MarkMachineReadyCommand(machine_id=machine.machine_id))
        except SDKError as exc:  # gone since it was listed: nothing to mark
            log.info("machine %s of node %s not marked ready: %s", machine.machine_id, machine.name, exc)


def reconcile_task(settings: Settings) -> PeriodicTask | None:
    """The reconcile as a periodic task of a long-lived engine (None without node sets or with
    `slurm.reconcile_interval` 0). Each pass first starts the worker on work left in the spool (a worker
    killed mid-resume), then repairs; a host without `scontrol` stops the task in this process."""
    from ...periodic import PeriodicTask

    slurm = settings.slurm
    if not slurm.nodesets or not slurm.reconcile_interval:
        return None

    async def run(execute: Execute) -> float | None:
        from . import programs, spool
        from .worker import exclusive

        where, log_file = programs.paths(settings)
        if any(True for _ in spool.pending(where)):
            with exclusive(where) as free:  # free: no worker runs (let go before starting one, which takes it)
                pass
            if free:
                programs.start_worker(settings.config_file, log_file)
        from .scontrol import ControllerError

        try:
            fixes = await reconcile(execute, slurm, float(slurm.resume_timeout))
        except ControllerError as exc:
            if exc.missing:
                log.warning("slurm reconcile off: %s not found on this host", slurm.scontrol)
                return 0.0
            log.warning("slurm reconcile: %s", exc)  # the controller is down: the next pass tries again
            return None
        for fix in fixes:
            log.warning("slurm reconcile: %s", fix)
        return None

    return PeriodicTask("slurm reconcile", slurm.reconcile_interval, run)
