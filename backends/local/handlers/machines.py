"""Machine handlers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from pluginsdk.errors import NotFoundError, StateConflictError
from pluginsdk.models import (
    ActiveMachineCount,
    CleanupResult,
    Machine,
    MachineHealth,
    MachineList,
    MachineReady,
    MachineStatus,
    RequestType,
    utcnow,
)
from pluginsdk.operations import (
    CleanupTerminatedMachinesCommand,
    GetActiveMachineCountQuery,
    GetMachineHealthQuery,
    GetMachineQuery,
    GetMachineStatusQuery,
    ListMachinesQuery,
)
from pluginsdk.operations.machine_signals import MarkMachineReadyCommand
from pluginsdk.words import counted

from ..attributes import machine_attrs
from ..deps import Deps
from ..provisioning.reconciler import reconcile
from ..registry import HandlerTable

if TYPE_CHECKING:
    from ..call import Call

handlers = HandlerTable(Deps)

ACTIVE = [s.value for s in MachineStatus if s.active]


async def _refresh(deps: Deps, machines: Sequence[Machine]) -> list[Machine]:
    """Reconcile the active requests these machines belong to, then re-read them."""
    request_ids = {m.request_id for m in machines if not m.status.gone}
    request_ids |= {m.return_request_id for m in machines if m.return_request_id and not m.status.gone}
    if not request_ids:
        return list(machines)
    for r in (await deps.store.get_requests(sorted(request_ids))).values():
        if not r.status.terminal or r.request_type is RequestType.RETURN:
            await reconcile(deps, r)
    again = await deps.store.get_machines([m.machine_id for m in machines])
    return [again.get(m.machine_id, m) for m in machines]


async def _load(deps: Deps, machine_id: str) -> Machine:
    m = await deps.store.get_machine(machine_id)
    if m is None:
        raise NotFoundError("machine", machine_id, f"Machine '{machine_id}' not found.")
    return m


@handlers.on(GetMachineQuery)
async def get_machine(deps: Deps, op: GetMachineQuery, call: Call) -> Machine:
    return (await _refresh(deps, [call.stored or await _load(deps, op.machine_id)]))[0]


@handlers.on(ListMachinesQuery)
async def list_machines(deps: Deps, op: ListMachinesQuery, call: Call) -> MachineList:
    principal = call.principal
    statuses = [op.status.value] if op.status else ACTIVE if op.active_only else None
    items, total = await deps.store.list_machines(
        statuses=statuses,
        template_id=op.template_id,
        request_id=op.request_id,
        provider_name=op.provider_name,
        limit=op.limit,
        offset=op.offset,
        access=await deps.access.readable(principal, "machine"),
    )
    shown = await deps.access.visible(principal, "machine", items, machine_attrs)
    total -= len(items) - len(shown)
    return MachineList(machines=shown, total_count=total, message=f"{total} machines")


@handlers.on(GetMachineStatusQuery)
async def get_machine_status(deps: Deps, op: GetMachineStatusQuery, call: Call) -> MachineList:
    principal = call.principal
    found = await deps.store.get_machines(op.machine_ids)
    shown = await deps.access.visible(principal, "machine", list(found.values()), machine_attrs)
    shown = await _refresh(deps, shown)
    missing = [mid for mid in op.machine_ids if mid not in {m.machine_id for m in shown}]
    return MachineList(
        machines=shown,
        total_count=len(shown),
        success=not missing,
        message=f"Machines not found: {', '.join(missing)}" if missing else counted(len(shown), "machine"),
    )


@handlers.on(GetMachineHealthQuery)
async def get_machine_health(deps: Deps, op: GetMachineHealthQuery, call: Call) -> MachineHealth:
    m = (await _refresh(deps, [await _load(deps, op.machine_id)]))[0]
    healthy = m.status is MachineStatus.RUNNING
    return MachineHealth(
        machine_id=m.machine_id,
        status=m.status.value,
        healthy=healthy,
        checks={"provider_state": m.status.value, "has_address": bool(m.ip_address), "reason": m.status_reason},
        message="Machine is running." if healthy else f"Machine is {m.status.value}.",
    )


@handlers.on(GetActiveMachineCountQuery)
async def get_active_machine_count(deps: Deps, op: GetActiveMachineCountQuery, call: Call) -> ActiveMachineCount:
    by_template = await deps.store.count_active_machines(op.template_id)
    total = sum(by_template.values())
    return ActiveMachineCount(count=total, by_template=by_template, message=f"{total} active machines")


@handlers.on(CleanupTerminatedMachinesCommand)
async def cleanup_terminated_machines(deps: Deps, op: CleanupTerminatedMachinesCommand, call: Call) -> CleanupResult:
    principal = call.principal
    before = utcnow() - timedelta(days=op.older_than_days)
    gone, _ = await deps.store.list_machines(
        statuses=[MachineStatus.TERMINATED.value, MachineStatus.FAILED.value], updated_before=before
    )
    gone = await deps.access.changeable(principal, "machine", gone, machine_attrs, "POST")
    deleted = await deps.store.delete_machines([m.machine_id for m in gone])
    return CleanupResult(
        machines_cleaned=deleted,
        total_cleaned=deleted,
        message=f"Removed {deleted} machine records older than {op.older_than_days} days.",
    )


@handlers.on(MarkMachineReadyCommand)
async def mark_machine_ready(deps: Deps, op: MarkMachineReadyCommand, call: Call) -> MachineReady:
    """Record the readiness, reset its template's bootstrap failures in a row, and settle its request."""
    m = call.stored or await _load(deps, op.machine_id)
    if m.status.gone:
        raise StateConflictError(
            f"Machine '{m.machine_id}' is {m.status.value}; only a machine that exists can be ready.",
            details={"field": "machine_id", "value": m.machine_id, "expected": "a pending or running machine"},
        )
    if await deps.boot.mark_ready(m.machine_id):
        await deps.boot.succeeded(m.template_id)
    await _refresh(deps, [m])
    request = await deps.store.get_request(m.request_id)
    status = request.status.value if request else "unknown"
    return MachineReady(
        machine_id=m.machine_id,
        request_status=status,
        message=f"Machine '{m.machine_id}' is ready; its request is {status}.",
    )
