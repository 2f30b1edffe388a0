"""Provisioning request handlers: create, then the commands on one request (cancel, complete, sync, set status)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pluginsdk.constants import new_request_id
from pluginsdk.errors import AlreadyExistsError, NotFoundError, StateConflictError, ValidationError
from pluginsdk.models import MachineStatus, Request, RequestCreated, RequestStatus, RequestType, can_transition, utcnow
from pluginsdk.operations import (
    CancelRequestCommand,
    CompleteRequestCommand,
    CreateRequestCommand,
    PopulateMachineIdsCommand,
    SyncRequestCommand,
    UpdateRequestStatusCommand,
)
from pluginsdk.words import counted

from ..deps import Deps
from ..providers.base import ProvisionedMachine
from ..provisioning import offerings, quotas
from ..provisioning.readiness import check_protection
from ..provisioning.reconciler import apply_states, ended, launch, reconcile, terminate_machines
from ..registry import HandlerTable
from .request_records import fresh, load_request, with_machines

if TYPE_CHECKING:
    from pluginsdk.models import Template

    from ..call import Call


handlers = HandlerTable(Deps)


@handlers.on(CreateRequestCommand)
async def create_request(deps: Deps, op: CreateRequestCommand, call: Call) -> RequestCreated:
    """validate -> record `pending` -> launch -> settle the first status (-> wait); a retry with the same
    request id answers the first result."""
    principal = call.principal
    if op.request_id and (existing := await deps.store.get_request(op.request_id)) is not None:
        return _replayed(existing, op)
    request_id = op.request_id or new_request_id()
    template = await _launchable(deps, op)
    await check_protection(deps, template)
    driver = await deps.providers.for_template(template)
    if op.dry_run:
        await quotas.check_quotas(deps, template, principal.user_id, op.requested_count, driver.name)
        return RequestCreated(  # no request_id: nothing was recorded, an id would read as not found
            status="dry-run",
            dry_run=True,
            message=f"Dry run: {counted(op.requested_count, 'machine')} of '{op.template_id}' would be requested "
            f"from '{driver.name}'; nothing was recorded, nothing was created.",
        )
    request = Request(
        request_id=request_id,
        status=RequestStatus.PENDING,
        template_id=op.template_id,
        count=op.requested_count,
        provider_name=driver.name,
        provider_api=template.provider_api,
        tags={**template.tags, **op.tags},
        timeout=op.timeout,
        created_by=principal.user_id,
        provider_data={"price_type": template.price_type}
        | ({"additional_data": op.additional_data} if op.additional_data else {})
        | ({"machine_names": op.machine_names} if op.machine_names else {}),
    )
    # one actor per request: no other process reconciles (or times out) the request while it is launched
    async with deps.store.claims.hold(request_id) as mine:
        if not mine:  # the same id is being created by another call right now: it launches, not us
            raise AlreadyExistsError(
                "request", request_id, f"Request '{request_id}' is being created by another call; retry to read it."
            )
        # recorded (with what it reserves of its quotas, or refused: 429) before the provider is called
        await quotas.reserve(deps, request, template)
        current = await launch(deps, driver, request, template)
    if op.wait:
        current = await wait_for(deps, current, op.timeout)
    return _created(await with_machines(deps, current), "Request submitted." if not op.wait else current.message)


def _replayed(existing: Request, op: CreateRequestCommand) -> RequestCreated:
    """An idempotent retry: the first answer again, unless the same id came with other parameters."""
    if existing.template_id != op.template_id or existing.count != op.requested_count:
        raise StateConflictError(
            f"Request '{op.request_id}' exists with other parameters.",
            details={"field": "request_id", "value": op.request_id, "expected": "a new id or the same parameters"},
        )
    return _created(existing, "Request already submitted (idempotent retry).")


async def _launchable(deps: Deps, op: CreateRequestCommand) -> Template:
    """The template asked for, when it exists and the count is within its `max_number` and the global limit."""
    template = await deps.templates.get(op.template_id)
    if template is None:
        raise NotFoundError("template", op.template_id, f"Template '{op.template_id}' not found.")
    limit = deps.settings.provider.max_machines_per_request
    if template.max_number is not None:
        limit = min(limit, template.max_number)
    if op.requested_count > limit:
        raise ValidationError(
            f"Cannot request {op.requested_count} machines from '{op.template_id}': at most {limit} per request.",
            details={"field": "requested_count", "value": op.requested_count, "expected": f"1..{limit}"},
        )
    return template


def _created(r: Request, message: str) -> RequestCreated:
    status = "submitted" if r.status in (RequestStatus.PENDING, RequestStatus.RUNNING) else r.status.value
    return RequestCreated(request_id=r.request_id, status=status, machines=r.machines, message=message)


async def wait_for(deps: Deps, request: Request, seconds: float) -> Request:
    """Reconcile the request until it is finished or `seconds` pass: the one wait loop (`pluginsdk.waiting`),
    pausing up to a second between reconciliations (each one asks the provider)."""
    from pluginsdk import waiting

    return await waiting.follow(lambda r: reconcile(deps, r), request, seconds=seconds, poll=1.0)


@handlers.on(CancelRequestCommand)
async def cancel_request(deps: Deps, op: CancelRequestCommand, call: Call) -> Request:
    principal = call.principal
    r = await load_request(deps, op.request_id)
    if r.request_type is RequestType.RETURN:
        raise StateConflictError(
            f"'{op.request_id}' is a return request; return requests cannot be cancelled.",
            details={"field": "request_id", "value": op.request_id, "expected": "a provisioning request"},
        )
    r = await fresh(deps, r)
    if r.status.terminal:
        raise StateConflictError(
            f"Request '{op.request_id}' is already {r.status.value}; "
            "only pending or running requests can be cancelled.",
            details={"field": "status", "value": r.status.value, "expected": "pending or running"},
        )
    machines = await deps.store.machines_of_request(r.request_id)
    doomed = [
        m
        for m in machines
        if m.status is MachineStatus.PENDING
        or (op.force and m.status in (MachineStatus.RUNNING, MachineStatus.STOPPED))
    ]
    reason = op.reason or "cancelled by " + principal.user_id
    async with deps.store.transaction():
        current = await load_request(deps, op.request_id)
        if not can_transition(current.status, RequestStatus.CANCELLED):
            raise StateConflictError(f"Request '{op.request_id}' is already {current.status.value}.")
        current = ended(current, RequestStatus.CANCELLED, f"Cancelled: {reason}")
        await deps.store.update_request(current)
    if doomed:
        await terminate_machines(deps, current, doomed)
    return await with_machines(deps, current)


@handlers.on(UpdateRequestStatusCommand)
async def update_request_status(deps: Deps, op: UpdateRequestStatusCommand, call: Call) -> Request:
    async with deps.store.transaction():
        r = await load_request(deps, op.request_id)
        if not can_transition(r.status, op.status):
            raise StateConflictError(
                f"Request '{op.request_id}' cannot go from {r.status.value} to {op.status.value}.",
                details={"field": "status", "value": op.status.value, "expected": sorted(_next(r.status))},
            )
        now = utcnow()
        r = r.model_copy(
            update={
                "status": op.status,
                "message": op.message or r.message,
                "updated_at": now,
                "completed_at": now if op.status.terminal else None,
            }
        )
        await deps.store.update_request(r)
    return await with_machines(deps, r)


def _next(status: RequestStatus) -> list[str]:
    from pluginsdk.models import REQUEST_TRANSITIONS

    return [s.value for s in REQUEST_TRANSITIONS[status]]


@handlers.on(SyncRequestCommand, PopulateMachineIdsCommand)
async def sync_request(deps: Deps, op: SyncRequestCommand | PopulateMachineIdsCommand, call: Call) -> Request:
    r = await load_request(deps, op.request_id)
    if r.request_type is RequestType.PROVISION and r.status.terminal and not r.dry_run:
        # still adopt machines the provider holds (crash recovery), without moving the status
        seen, providers = await _seen(deps, r)
        async with deps.store.transaction():  # the request's row, then its machines': the order every writer locks
            r = await load_request(deps, r.request_id, for_update=True)
            stored = {m.machine_id: m for m in await deps.store.machines_of_request(r.request_id, for_update=True)}
            changed = apply_states(r, stored, seen, providers)
            if changed:
                await deps.store.upsert_machines(changed)
                r = r.model_copy(update={"machine_ids": list(stored), "updated_at": utcnow()})
                await deps.store.update_request(r)
    else:
        r = await reconcile(deps, r)
    return await with_machines(deps, r)


async def _seen(deps: Deps, r: Request) -> tuple[list[ProvisionedMachine], dict[str, str] | None]:
    """What the provider(s) of a finished request hold for it, and which instance reported each machine."""
    template = await deps.templates.get(r.template_id or "")
    if offerings.has_offerings(r):
        _, seen, providers = await offerings.observe(deps, r, template)
        return seen, providers
    return await (await deps.providers.get(r.provider_name)).describe(r, template), None


@handlers.on(CompleteRequestCommand)
async def complete_request(deps: Deps, op: CompleteRequestCommand, call: Call) -> Request:
    principal = call.principal
    r = await fresh(deps, await load_request(deps, op.request_id))
    if r.status.terminal:
        raise StateConflictError(
            f"Request '{op.request_id}' is already {r.status.value}.",
            details={"field": "status", "value": r.status.value, "expected": "pending or running"},
        )
    machines = await deps.store.machines_of_request(r.request_id)
    up = sum(1 for m in machines if m.status is MachineStatus.RUNNING)
    status = RequestStatus.COMPLETED if up >= r.count else RequestStatus.PARTIAL if up else RequestStatus.FAILED
    r = ended(r, status, op.message or f"Completed by {principal.user_id} with {up} of {r.count} machines running.")
    await deps.store.update_request(r)
    return await with_machines(deps, r)
