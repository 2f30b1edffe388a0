"""Cleanup handlers: finished requests older than a threshold, terminated machines, provider leftovers."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from pluginsdk.errors import ProviderError
from pluginsdk.models import CleanupResult, MachineStatus, RequestStatus, RequestType, utcnow
from pluginsdk.operations import CleanupAllResourcesCommand, CleanupOldRequestsCommand
from pluginsdk.principal import Principal
from pluginsdk.words import counted

from ..attributes import machine_attrs, request_attrs
from ..deps import Deps
from ..provisioning.reconciler import sweep_orphans
from ..registry import HandlerTable

if TYPE_CHECKING:
    from ..call import Call


handlers = HandlerTable(Deps)

log = logging.getLogger("pluginsdk.requests")


async def _cleanup_requests(
    deps: Deps, principal: Principal, statuses: list[str], older_than_days: float, dry_run: bool
) -> tuple[list[str], int]:
    """Delete finished requests older than the threshold whose machines are all gone (running machines are kept),
    among those the caller may read and change."""
    before = utcnow() - timedelta(days=older_than_days)
    found, _ = await deps.store.list_requests(statuses=statuses, created_before=before)
    candidates = await deps.access.changeable(principal, "request", found, request_attrs, "POST")
    ids: list[str] = []
    for r in candidates:
        if r.request_type is RequestType.PROVISION:
            machines = await deps.store.machines_of_request(r.request_id)
            if any(not m.status.gone for m in machines):
                continue
        ids.append(r.request_id)
    machines_deleted = 0
    if ids and not dry_run:
        async with deps.store.transaction():
            for rid in ids:
                machines_deleted += len(await deps.store.machines_of_request(rid))
            await deps.store.delete_requests(ids)
    return ids, machines_deleted


@handlers.on(CleanupOldRequestsCommand)
async def cleanup_old_requests(deps: Deps, op: CleanupOldRequestsCommand, call: Call) -> CleanupResult:
    principal = call.principal
    ids, machines = await _cleanup_requests(
        deps, principal, [s.value for s in op.statuses_to_cleanup], op.older_than_days, op.dry_run
    )
    cleaned = 0 if op.dry_run else len(ids)
    return CleanupResult(
        requests_cleaned=cleaned,
        request_ids_found=ids,
        machines_cleaned=0 if op.dry_run else machines,
        total_cleaned=cleaned + (0 if op.dry_run else machines),
        message=("Dry run: " if op.dry_run else "")
        + f"{counted(len(ids), 'request')} older than {op.older_than_days} days.",
    )


@handlers.on(CleanupAllResourcesCommand)
async def cleanup_all_resources(deps: Deps, op: CleanupAllResourcesCommand, call: Call) -> CleanupResult:
    principal = call.principal
    if op.include_pending:
        before = utcnow() - timedelta(days=op.older_than_days)
        pending, _ = await deps.store.list_requests(statuses=[RequestStatus.PENDING.value], created_before=before)
        for r in await deps.access.changeable(principal, "request", pending, request_attrs, "POST"):
            await deps.store.update_request(
                r.model_copy(
                    update={
                        "status": RequestStatus.FAILED,
                        "message": "Failed by cleanup: pending too long.",
                        "completed_at": utcnow(),
                    }
                )
            )
    statuses = [s.value for s in RequestStatus if s.terminal]
    ids, machines = await _cleanup_requests(deps, principal, statuses, op.older_than_days, False)
    before = utcnow() - timedelta(days=op.older_than_days)
    gone, _ = await deps.store.list_machines(
        statuses=[MachineStatus.TERMINATED.value, MachineStatus.FAILED.value], updated_before=before
    )
    gone = await deps.access.changeable(principal, "machine", gone, machine_attrs, "POST")
    machines += await deps.store.delete_machines([m.machine_id for m in gone])
    try:  # provider leftovers of finished requests (AWS launch templates) go too
        orphans = await sweep_orphans(deps)
    except ProviderError as exc:
        log.warning("sweeping orphaned provider resources failed: %s", exc.message)
        orphans = []
    return CleanupResult(
        requests_cleaned=len(ids),
        request_ids_found=ids,
        machines_cleaned=machines,
        total_cleaned=len(ids) + machines,
        message=f"Removed {counted(len(ids), 'request')} and {counted(machines, 'machine')} "
        f"older than {op.older_than_days} days"
        + (f", and {counted(len(orphans), 'orphaned launch template')}." if orphans else "."),
    )
