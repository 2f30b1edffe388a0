"""Provisioning and return request handlers."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pluginsdk._words import counted
from pluginsdk.errors import AlreadyExistsError, NotFoundError, ProviderError, StateConflictError, ValidationError
from pluginsdk.models import (
    CleanupResult,
    Machine,
    MachineStatus,
    Request,
    RequestCreated,
    RequestList,
    RequestStatus,
    RequestStatusList,
    RequestSummary,
    RequestType,
    ReturnRequestCreated,
    SkippedMachine,
    can_transition,
    utcnow,
)
from pluginsdk.operations import (
    CancelRequestCommand,
    CleanupAllResourcesCommand,
    CleanupOldRequestsCommand,
    CompleteRequestCommand,
    CreateRequestCommand,
    CreateReturnRequestCommand,
    GetRequestQuery,
    GetRequestStatusQuery,
    GetRequestSummaryQuery,
    ListActiveRequestsQuery,
    ListRequestsQuery,
    ListReturnRequestsQuery,
    PopulateMachineIdsCommand,
    SyncRequestCommand,
    UpdateRequestStatusCommand,
)
from pluginsdk.principal import Principal

from ..reconciler import (
    RETURNED_BEFORE_RUNNING,
    apply_states,
    ended,
    launch,
    reconcile,
    record_reclaimed,
    sweep_orphans,
    terminate_machines,
)
from ..registry import HandlerTable

if TYPE_CHECKING:
    from ..call import Call
    from ..engine import Engine

handlers = HandlerTable()

if TYPE_CHECKING:
    from pluginsdk.models import Template


log = logging.getLogger("pluginsdk.requests")

ACTIVE = (RequestStatus.PENDING.value, RequestStatus.RUNNING.value)


def request_attrs(r: Request) -> dict[str, Any]:
    return {"requestId": r.request_id, "templateId": r.template_id, "userId": r.created_by}


async def load_request(engine: Engine, request_id: str, *, for_update: bool = False) -> Request:
    r = await engine.db.get_request(request_id, for_update=for_update)
    if r is None:
        raise NotFoundError("request", request_id, f"Request '{request_id}' not found.")
    return r


async def with_machines(engine: Engine, r: Request) -> Request:
    return (await with_machines_all(engine, [r]))[0]


async def with_machines_all(engine: Engine, requests: list[Request]) -> list[Request]:
    """The requests with their machine records, read in at most two queries (a status poll of 100 requests
    is one query, not 100)."""
    found: dict[str, list[Machine]] = {}
    for returns in (False, True):
        ids = [r.request_id for r in requests if (r.request_type is RequestType.RETURN) is returns]
        if ids:
            found.update(await engine.db.machines_of_requests(ids, returns=returns))
    return [r.model_copy(update={"machines": found[r.request_id]}) for r in requests]


async def fresh(engine: Engine, r: Request, *, lightweight: bool = False) -> Request:
    """The request advanced from its provider (unless lightweight or finished)."""
    if lightweight or r.status.terminal or r.dry_run:
        return r
    return await reconcile(engine, r)


@handlers.on(CreateRequestCommand)
async def create_request(engine: Engine, op: CreateRequestCommand, call: Call) -> RequestCreated:
    """validate -> record `pending` -> launch -> settle the first status (-> wait); a retry with the same
    request id answers the first result."""
    principal = call.principal
    if op.request_id and (existing := await engine.db.get_request(op.request_id)) is not None:
        return _replayed(existing, op)
    request_id = op.request_id or f"req-{uuid.uuid4()}"
    template = await _launchable(engine, op)
    driver = await engine.provider_for(template)
    if op.dry_run:
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
    async with engine.db.claims.hold(request_id) as mine:
        if not mine:  # the same id is being created by another call right now: it launches, not us
            raise AlreadyExistsError(
                "request", request_id, f"Request '{request_id}' is being created by another call; retry to read it."
            )
        await engine.db.insert_request(request)  # recorded before the provider is called: a crash loses nothing
        current = await launch(engine, driver, request, template)
    if op.wait:
        current = await wait_for(engine, current, op.timeout)
    return _created(await with_machines(engine, current), "Request submitted." if not op.wait else current.message)


def _replayed(existing: Request, op: CreateRequestCommand) -> RequestCreated:
    """An idempotent retry: the first answer again, unless the same id came with other parameters."""
    if existing.template_id != op.template_id or existing.count != op.requested_count:
        raise StateConflictError(
            f"Request '{op.request_id}' exists with other parameters.",
            details={"field": "request_id", "value": op.request_id, "expected": "a new id or the same parameters"},
        )
    return _created(existing, "Request already submitted (idempotent retry).")


async def _launchable(engine: Engine, op: CreateRequestCommand) -> Template:
    """The template asked for, when it exists and the count is within its `max_number` and the global limit."""
    template = await engine.template(op.template_id)
    if template is None:
        raise NotFoundError("template", op.template_id, f"Template '{op.template_id}' not found.")
    limit = engine.settings.provider.max_machines_per_request
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


async def wait_for(engine: Engine, request: Request, seconds: float) -> Request:
    """Poll the request until it is finished or `seconds` pass."""
    deadline = time.monotonic() + seconds
    delay = 0.05
    while not request.status.terminal and time.monotonic() < deadline:
        await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 1.5, 1.0)
        request = await reconcile(engine, request)
    return request


async def machines_by_name(engine: Engine, names: list[str]) -> dict[str, Machine]:
    """Machines by host name (HostFactory and LSF return hosts by name). A name reused after its machine
    went away names the live machine; among several, the newest."""
    out: dict[str, Machine] = {}
    for m in sorted(await engine.db.machines_named(names), key=lambda m: (m.created_at, m.machine_id)):
        prior = out.get(m.name or "")
        if prior is None or not m.status.gone or prior.status.gone:
            out[m.name or ""] = m
    return out


@handlers.on(CreateReturnRequestCommand)
async def create_return_request(engine: Engine, op: CreateReturnRequestCommand, call: Call) -> ReturnRequestCreated:
    """validate -> select -> screen -> claim -> terminate -> settle; a retry with the same request id answers
    the first result (docs/design.md, "Requests, machines, reconciliation")."""
    principal = call.principal
    _validate_return(op)
    if op.request_id and (existing := await engine.db.get_request(op.request_id)) is not None:
        return ReturnRequestCreated(
            request_id=existing.request_id,
            created_request_ids=[existing.request_id],
            processed_machines=existing.machine_ids,
            message="Return request already submitted (idempotent retry).",
        )
    wanted, machines = await _select_returned(engine, op, principal)
    chosen, skipped = await _screen(engine, op, principal, wanted, machines)
    if op.dry_run or not chosen:
        return await _nothing_returned(engine, op, principal, chosen, skipped)
    ret_id = op.request_id or f"ret-{uuid.uuid4()}"
    # one actor per request: no other process reconciles this return while its machines are handed back
    async with engine.db.claims.hold(ret_id):
        ret, chosen, lost = await _claim(engine, op, principal, ret_id, chosen)
        skipped += lost
        if ret is None:
            return await _nothing_returned(engine, op, principal, [], skipped)
        failures = await _terminate(engine, chosen)
    await (release_failed(engine, ret_id, failures) if failures else reconcile(engine, ret))
    return _returning(ret_id, chosen, skipped, failures)


def _validate_return(op: CreateReturnRequestCommand) -> None:
    if op.return_all and not op.force_return:
        raise ValidationError(
            "return_all returns every active machine; confirm with force_return.",
            details={"field": "force_return", "value": False, "expected": True},
        )
    if not op.machine_ids and not op.return_all and not op.from_request_id:
        raise ValidationError(
            "Give the machine ids to return, or from_request_id: the provisioning request whose machines to return.",
            details={"field": "machine_ids", "value": [], "expected": "1 or more ids"},
        )


async def _select_returned(
    engine: Engine, op: CreateReturnRequestCommand, principal: Principal
) -> tuple[list[str], dict[str, Machine]]:
    """The machine ids asked for (in order, once each) and the machines found by id: every active machine
    with `return_all`; else the machines of `from_request_id`, then each entry as a machine id or, failing
    that, a host name (IBM makes only `name` mandatory)."""
    if op.return_all:
        found, _ = await engine.db.list_machines(statuses=[s.value for s in MachineStatus if s.active])
        machines = {m.machine_id: m for m in found}
        return list(machines), machines
    asked = (
        [*await _machines_of(engine, op.from_request_id, principal), *op.machine_ids]
        if op.from_request_id
        else op.machine_ids
    )
    machines = await engine.db.get_machines(asked)
    named = await machines_by_name(engine, [i for i in asked if i not in machines])
    wanted = []
    for given in asked:
        m = machines.get(given) or named.get(given)
        if m is not None and given not in machines:
            machines[m.machine_id] = m
        wanted.append(m.machine_id if m is not None else given)
    return list(dict.fromkeys(wanted)), machines


async def _machines_of(engine: Engine, request_id: str, principal: Principal) -> list[str]:
    """The machine ids of a provisioning request the caller may read (one it may not read is not found)."""
    r = await engine.db.get_request(request_id)
    if r is None or not await engine.visible(principal, "request", [r], request_attrs):
        raise NotFoundError("request", request_id, f"Request '{request_id}' not found.")
    if r.request_type is not RequestType.PROVISION:
        raise ValidationError(
            f"'{request_id}' is a return request; from_request_id takes the provisioning request whose machines "
            "to return.",
            details={"field": "from_request_id", "value": request_id, "expected": "a provisioning request id"},
        )
    return [m.machine_id for m in await engine.db.machines_of_request(request_id)]


async def _screen(
    engine: Engine,
    op: CreateReturnRequestCommand,
    principal: Principal,
    wanted: list[str],
    machines: dict[str, Machine],
) -> tuple[list[Machine], list[SkippedMachine]]:
    """The machines to return, and the others skipped with why (one the caller may not read, or may read but not
    return, is "not found")."""
    returnable = await engine.changeable(principal, "machine", machines.values(), machine_attrs, "POST")
    allowed = {m.machine_id for m in returnable}
    held = sorted(
        {
            m.return_request_id
            for m in machines.values()
            if m.machine_id in allowed and m.return_request_id and not m.status.gone
        }
    )
    open_returns = {rid for rid, r in (await engine.db.get_requests(held)).items() if not r.status.terminal}
    chosen: list[Machine] = []
    skipped: list[SkippedMachine] = []
    for mid in wanted:
        m = machines.get(mid)
        if m is None or mid not in allowed:
            skipped.append(SkippedMachine(machine_id=mid, reason="not found"))
        elif why := _not_returnable(m, open_returns, force=op.force_return):
            skipped.append(SkippedMachine(machine_id=mid, reason=why))
        else:
            chosen.append(m)
    return chosen, skipped


def _not_returnable(m: Machine, open_returns: set[str], *, force: bool) -> str | None:
    """Why the machine is not returned (already gone, in an open return, still starting), or None."""
    if m.status.gone:
        return f"already returned by {m.return_request_id}" if m.return_request_id else f"already {m.status.value}"
    if m.return_request_id in open_returns:
        return f"already being returned by {m.return_request_id}"
    if m.status is MachineStatus.PENDING and not force:
        return "still starting; use force_return"
    return None


async def _nothing_returned(
    engine: Engine,
    op: CreateReturnRequestCommand,
    principal: Principal,
    chosen: list[Machine],
    skipped: list[SkippedMachine],
) -> ReturnRequestCreated:
    """The answer when nothing is handed back: a dry run's plan, or every machine skipped. When every machine
    asked for is already gone: a completed, empty return request the caller can poll (IBM's plugin answers
    "No Active VM" with a request id), not an error."""
    gone = [k for k in skipped if k.reason.startswith(("already returned by ", "already terminated", "already failed"))]
    if not op.dry_run and gone and len(gone) == len(skipped):
        ret = Request(
            request_id=op.request_id or f"ret-{uuid.uuid4()}",
            request_type=RequestType.RETURN,
            status=RequestStatus.COMPLETED,
            count=0,
            machine_ids=[],  # it took none back: each machine stays in the one return that did (its skip says which)
            created_by=principal.user_id,
            completed_at=utcnow(),
            message=f"No active machine to return: {len(gone)} already gone.",
        )
        await engine.db.insert_request(ret)
        return ReturnRequestCreated(
            request_id=ret.request_id, created_request_ids=[ret.request_id], skipped_machines=gone, message=ret.message
        )
    return ReturnRequestCreated(
        processed_machines=[m.machine_id for m in chosen],
        skipped_machines=skipped,
        message=f"Dry run: {counted(len(chosen), 'machine')} would be returned, {len(skipped)} skipped; "
        "nothing was recorded."
        if op.dry_run
        else f"No machine returned; {len(skipped)} skipped.",
    )


async def _claim(
    engine: Engine, op: CreateReturnRequestCommand, principal: Principal, ret_id: str, chosen: list[Machine]
) -> tuple[Request | None, list[Machine], list[SkippedMachine]]:
    """Record the return request and mark its machines, in one transaction. The store decides each machine
    (`reassign_machines`: taken only while it is still held as it was screened), so of two returns racing
    for a machine — any process, SQLite or PostgreSQL — one takes it and the other skips it. Returns (the
    return or None when nothing is left, the claimed machines, those lost to another claim)."""
    screened = {m.machine_id: m.return_request_id for m in chosen}
    async with engine.db.transaction():
        latest = await engine.db.get_machines(list(screened), for_update=True)  # their current state, locked
        current = [m for mid in screened if (m := latest.get(mid)) is not None and m.return_request_id == screened[mid]]
        claimed = await engine.db.reassign_machines(_marked(ret_id, current), screened)
        taken = {m.machine_id for m in claimed}
        if len(taken) < len(screened):
            latest.update(await engine.db.get_machines([mid for mid in screened if mid not in taken]))
        lost = [_lost(mid, latest.get(mid)) for mid in screened if mid not in taken]
        if not claimed:
            return None, [], lost
        origins = await engine.db.get_requests(sorted({m.request_id for m in claimed}))
        ret = _return_record(op, principal, ret_id, claimed, origins)
        await engine.db.insert_request(ret)
    return ret, claimed, lost


def _lost(machine_id: str, m: Machine | None) -> SkippedMachine:
    """Why a screened machine was not claimed: another return took it (or it went) since it was read."""
    if m is None:
        return SkippedMachine(machine_id=machine_id, reason="not found")
    if m.status.gone:
        return SkippedMachine(machine_id=machine_id, reason=_not_returnable(m, set(), force=True) or "already gone")
    return SkippedMachine(machine_id=machine_id, reason=f"already being returned by {m.return_request_id}")


def _return_record(
    op: CreateReturnRequestCommand,
    principal: Principal,
    ret_id: str,
    claimed: list[Machine],
    origins: dict[str, Request],
) -> Request:
    """The new return request of the claimed machines."""
    return Request(
        request_id=ret_id,
        request_type=RequestType.RETURN,
        status=RequestStatus.RUNNING,
        count=len(claimed),
        provider_name=claimed[0].provider_name,
        machine_ids=[m.machine_id for m in claimed],
        timeout=op.timeout,
        created_by=principal.user_id,
        message=f"Returning {counted(len(claimed), 'machine')}.",
        # what the scheduler saw on the provisioning side, kept for the return's own listing
        tags={k: v for o in origins.values() for k, v in o.tags.items() if k == "rc_account"},
        provider_data={
            "rc_accounts": {
                m.machine_id: origins[m.request_id].tags["rc_account"]
                for m in claimed
                if m.request_id in origins and "rc_account" in origins[m.request_id].tags
            }
        },
    )


def _marked(ret_id: str, machines: list[Machine]) -> list[Machine]:
    """The machines marked as claimed by the return (one still starting is withdrawn)."""
    now = utcnow()
    return [
        m.model_copy(
            update={
                "return_request_id": ret_id,
                "updated_at": now,
                **({"status_reason": RETURNED_BEFORE_RUNNING} if m.status is MachineStatus.PENDING else {}),
            }
        )
        for m in machines
    ]


async def _terminate(engine: Engine, machines: list[Machine]) -> dict[str, str]:
    """Hand the claimed machines back, per provisioning request; returns those the provider refused, with why."""
    groups: dict[str, list[Machine]] = defaultdict(list)
    for m in machines:
        groups[m.request_id].append(m)
    failures: dict[str, str] = {}
    for request_id, group in groups.items():
        origin = await engine.db.get_request(request_id)
        if origin is None:
            continue
        try:
            await terminate_machines(engine, origin, group)
        except ProviderError as exc:
            failures.update({m.machine_id: exc.message for m in group})
    return failures


def _returning(
    ret_id: str, chosen: list[Machine], skipped: list[SkippedMachine], failures: dict[str, str]
) -> ReturnRequestCreated:
    returning = len(chosen) - len(failures)
    message = f"Returning {counted(returning, 'machine')}" + (f"; {len(skipped)} skipped" if skipped else "")
    if failures:
        why = next(iter(failures.values())).rstrip(".")
        message += f"; the provider failed to take back {len(failures)} ({why}), they can be returned again"
    return ReturnRequestCreated(
        request_id=ret_id,
        created_request_ids=[ret_id],
        processed_machines=[m.machine_id for m in chosen if m.machine_id not in failures],
        skipped_machines=skipped,
        message=message + ".",
    )


async def release_failed(engine: Engine, ret_id: str, failures: dict[str, str]) -> Request:
    """The provider refused to take these machines back: they leave the return (returnable again, also
    with `machines return --force`), the return remembers them as failed, and it ends at once when
    nothing else is left to wait for (`failed`, or `partial` when some machines did go)."""
    now = utcnow()
    async with engine.db.transaction():  # the request's row, then its machines': the order every writer locks
        ret = await load_request(engine, ret_id, for_update=True)
        stuck = await engine.db.get_machines(list(failures), for_update=True)
        released = [
            m.model_copy(
                update={
                    "return_request_id": None,
                    "updated_at": now,
                    # its launch was not stopped after all: no longer withdrawn
                    "status_reason": None if m.status_reason == RETURNED_BEFORE_RUNNING else m.status_reason,
                }
            )
            for m in stuck.values()
            if m.return_request_id == ret_id
        ]
        await engine.db.reassign_machines(released, {m.machine_id: ret_id for m in released})
        failed = dict(ret.provider_data.get("failed_machines") or {})
        failed.update(
            {
                mid: {"name": stuck[mid].name if mid in stuck else None, "reason": reason}
                for mid, reason in failures.items()
            }
        )
        ret = ret.model_copy(
            update={"provider_data": {**ret.provider_data, "failed_machines": failed}, "updated_at": now}
        )
        await engine.db.update_request(ret)
    return await reconcile(engine, ret)


def machine_attrs(m: Machine) -> dict[str, Any]:
    return {"machineId": m.machine_id, "templateId": m.template_id, "requestId": m.request_id}


@handlers.on(CancelRequestCommand)
async def cancel_request(engine: Engine, op: CancelRequestCommand, call: Call) -> Request:
    principal = call.principal
    r = await load_request(engine, op.request_id)
    if r.request_type is RequestType.RETURN:
        raise StateConflictError(
            f"'{op.request_id}' is a return request; return requests cannot be cancelled.",
            details={"field": "request_id", "value": op.request_id, "expected": "a provisioning request"},
        )
    r = await fresh(engine, r)
    if r.status.terminal:
        raise StateConflictError(
            f"Request '{op.request_id}' is already {r.status.value}; "
            "only pending or running requests can be cancelled.",
            details={"field": "status", "value": r.status.value, "expected": "pending or running"},
        )
    machines = await engine.db.machines_of_request(r.request_id)
    doomed = [
        m
        for m in machines
        if m.status is MachineStatus.PENDING
        or (op.force and m.status in (MachineStatus.RUNNING, MachineStatus.STOPPED))
    ]
    reason = op.reason or "cancelled by " + principal.user_id
    async with engine.db.transaction():
        current = await load_request(engine, op.request_id)
        if not can_transition(current.status, RequestStatus.CANCELLED):
            raise StateConflictError(f"Request '{op.request_id}' is already {current.status.value}.")
        current = ended(current, RequestStatus.CANCELLED, f"Cancelled: {reason}")
        await engine.db.update_request(current)
    if doomed:
        await terminate_machines(engine, current, doomed)
    return await with_machines(engine, current)


@handlers.on(UpdateRequestStatusCommand)
async def update_request_status(engine: Engine, op: UpdateRequestStatusCommand, call: Call) -> Request:
    async with engine.db.transaction():
        r = await load_request(engine, op.request_id)
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
        await engine.db.update_request(r)
    return await with_machines(engine, r)


def _next(status: RequestStatus) -> list[str]:
    from pluginsdk.models import REQUEST_TRANSITIONS

    return [s.value for s in REQUEST_TRANSITIONS[status]]


@handlers.on(SyncRequestCommand, PopulateMachineIdsCommand)
async def sync_request(engine: Engine, op: SyncRequestCommand | PopulateMachineIdsCommand, call: Call) -> Request:
    r = await load_request(engine, op.request_id)
    if r.request_type is RequestType.PROVISION and r.status.terminal and not r.dry_run:
        # still adopt machines the provider holds (crash recovery), without moving the status
        driver = await engine.provider(r.provider_name)
        seen = await driver.describe(r, await engine.template(r.template_id or ""))
        async with engine.db.transaction():  # the request's row, then its machines': the order every writer locks
            r = await load_request(engine, r.request_id, for_update=True)
            stored = {m.machine_id: m for m in await engine.db.machines_of_request(r.request_id, for_update=True)}
            changed = apply_states(r, stored, seen)
            if changed:
                await engine.db.upsert_machines(changed)
                r = r.model_copy(update={"machine_ids": list(stored), "updated_at": utcnow()})
                await engine.db.update_request(r)
    else:
        r = await reconcile(engine, r)
    return await with_machines(engine, r)


@handlers.on(CompleteRequestCommand)
async def complete_request(engine: Engine, op: CompleteRequestCommand, call: Call) -> Request:
    principal = call.principal
    r = await fresh(engine, await load_request(engine, op.request_id))
    if r.status.terminal:
        raise StateConflictError(
            f"Request '{op.request_id}' is already {r.status.value}.",
            details={"field": "status", "value": r.status.value, "expected": "pending or running"},
        )
    machines = await engine.db.machines_of_request(r.request_id)
    up = sum(1 for m in machines if m.status is MachineStatus.RUNNING)
    status = RequestStatus.COMPLETED if up >= r.count else RequestStatus.PARTIAL if up else RequestStatus.FAILED
    r = ended(r, status, op.message or f"Completed by {principal.user_id} with {up} of {r.count} machines running.")
    await engine.db.update_request(r)
    return await with_machines(engine, r)


@handlers.on(GetRequestQuery)
async def get_request(engine: Engine, op: GetRequestQuery, call: Call) -> Request:
    r = await fresh(engine, call.stored or await load_request(engine, op.request_id), lightweight=op.lightweight)
    return await with_machines(engine, r) if op.long else r


@handlers.on(GetRequestStatusQuery)
async def get_request_status(engine: Engine, op: GetRequestStatusQuery, call: Call) -> RequestStatusList:
    principal = call.principal
    found = await engine.db.get_requests(op.request_ids)
    visible = {r.request_id for r in await engine.visible(principal, "request", list(found.values()), request_attrs)}
    out: list[Request] = []
    missing: list[str] = []
    for rid in op.request_ids:
        r = found.get(rid)
        if r is None or rid not in visible:
            missing.append(rid)
            continue
        out.append(await fresh(engine, r))
    if missing and len(op.request_ids) == 1 and not op.report_missing:
        raise NotFoundError("request", missing[0], f"Request '{missing[0]}' not found; run `pluginsdk requests list`.")
    if op.long:
        out = await with_machines_all(engine, out)
    return RequestStatusList(
        requests=out,
        not_found=missing,
        message="" if not missing else f"{len(missing)} request(s) not found: {', '.join(missing[:5])}",
    )


LIST_REFRESH_MAX = 50
"""Most unfinished requests one listing brings up to date from the provider (the rest: the background loop)."""
LIST_REFRESH_SECONDS = 2.0


async def refresh_listed(engine: Engine, requests: list[Request]) -> tuple[list[Request], int]:
    """The listed requests with the unfinished ones reconciled, bounded in number and time, so a listing
    never shows a long-finished request as running; returns (requests, how many could not be refreshed)."""
    deadline = time.monotonic() + LIST_REFRESH_SECONDS
    out: list[Request] = []
    done = stale = 0
    for listed in requests:
        r = listed
        if not r.status.terminal and not r.dry_run:
            if done < LIST_REFRESH_MAX and time.monotonic() < deadline:
                try:
                    r = await reconcile(engine, r)
                except ProviderError as exc:
                    log.warning("refreshing %s failed: %s", r.request_id, exc.message)
                    stale += 1
                done += 1
            else:
                stale += 1
        out.append(r)
    return out, stale


async def _listing(
    engine: Engine,
    principal: Principal,
    requests: list[Request],
    total: int,
    *,
    active_only: bool = False,
    stale: int | None = None,
) -> RequestList:
    shown = await engine.visible(principal, "request", requests, request_attrs)
    if len(shown) != len(requests):
        total -= len(requests) - len(shown)
    if stale is None:
        shown, stale = await refresh_listed(engine, shown)
    if active_only:  # finished while we looked: not active any more
        kept = [r for r in shown if not r.status.terminal]
        total -= len(shown) - len(kept)
        shown = kept
    message = counted(total, "request")
    if stale:
        message += f"; {stale} unfinished not refreshed from the provider (a status read refreshes them)"
    return RequestList(requests=shown, total_count=total, message=message)


@handlers.on(ListRequestsQuery)
async def list_requests(engine: Engine, op: ListRequestsQuery, call: Call) -> RequestList:
    principal = call.principal
    items, total = await engine.db.list_requests(
        statuses=[op.status.value] if op.status else None,
        template_id=op.template_id,
        request_type=op.request_type,
        limit=op.limit,
        offset=op.offset,
    )
    return await _listing(engine, principal, items, total)


_FILTER_FIELDS = {"template_id", "status", "request_type", "provider_name", "created_by", "provider_api"}


def _filters(expressions: list[str]) -> list[tuple[str, bool, str]]:
    out = []
    for expr in expressions:
        negate = "!=" in expr
        field, sep, value = expr.partition("!=" if negate else "=")
        field = field.strip()
        if not sep or field not in _FILTER_FIELDS:
            raise ValidationError(
                f"Bad filter expression {expr!r}; use field=value or field!=value with a field of "
                f"{', '.join(sorted(_FILTER_FIELDS))}.",
                details={"field": "filter_expressions", "value": expr, "expected": "field=value"},
            )
        out.append((field, negate, value.strip()))
    return out


@handlers.on(ListActiveRequestsQuery)
async def list_active_requests(engine: Engine, op: ListActiveRequestsQuery, call: Call) -> RequestList:
    principal = call.principal
    filters = _filters(op.filter_expressions)
    items, total = await engine.db.list_requests(
        statuses=None if op.all_resources else ACTIVE,
        provider_name=op.provider_name,
        limit=None if filters else op.limit,
        offset=0 if filters else op.offset,
    )
    if filters:

        def keep(r: Request) -> bool:
            return all((str(getattr(r, f) or "") == v) != neg for f, neg, v in filters)

        items = [r for r in items if keep(r)]
        total = len(items)
        items = items[op.offset : op.offset + op.limit]
    return await _listing(engine, principal, items, total, active_only=not op.all_resources)


@handlers.on(ListReturnRequestsQuery)
async def list_return_requests(engine: Engine, op: ListReturnRequestsQuery, call: Call) -> RequestList:
    principal = call.principal
    try:  # machines the cloud took back (spot interruptions) are listed as return requests too
        await record_reclaimed(engine)
    except ProviderError as exc:
        log.warning("checking reclaimed machines failed: %s", exc.message)
    items, total = await engine.db.list_requests(
        statuses=[op.status.value] if op.status else None,
        request_type=RequestType.RETURN.value,
        provider_name=op.provider_name,
        limit=None if op.machine_names else op.limit,
        offset=0 if op.machine_names else op.offset,
    )
    items, stale = await refresh_listed(engine, items)
    if op.machine_names:
        wanted = set(op.machine_names)
        items = await with_machines_all(engine, items)
        items = [
            r for r in items if wanted & ({m.machine_id for m in r.machines} | {m.name for m in r.machines if m.name})
        ]
        total = len(items)
        items = items[op.offset : op.offset + op.limit]
    else:
        items = await with_machines_all(engine, items)
    return await _listing(engine, principal, items, total, stale=stale)


@handlers.on(GetRequestSummaryQuery)
async def get_request_summary(engine: Engine, op: GetRequestSummaryQuery, call: Call) -> RequestSummary:
    by_status = await engine.db.count_requests_by("status", op.template_id)
    by_type = await engine.db.count_requests_by("request_type", op.template_id)
    return RequestSummary(
        total_requests=sum(by_status.values()),
        by_status=by_status,
        by_type=by_type,
        machines_by_status=await engine.db.count_machines_by_status(),
        message=f"{sum(by_status.values())} requests",
    )


async def _cleanup_requests(
    engine: Engine, principal: Principal, statuses: list[str], older_than_days: float, dry_run: bool
) -> tuple[list[str], int]:
    """Delete finished requests older than the threshold whose machines are all gone (running machines are kept),
    among those the caller may read and change."""
    before = utcnow() - timedelta(days=older_than_days)
    found, _ = await engine.db.list_requests(statuses=statuses, created_before=before)
    candidates = await engine.changeable(principal, "request", found, request_attrs, "POST")
    ids: list[str] = []
    for r in candidates:
        if r.request_type is RequestType.PROVISION:
            machines = await engine.db.machines_of_request(r.request_id)
            if any(not m.status.gone for m in machines):
                continue
        ids.append(r.request_id)
    machines_deleted = 0
    if ids and not dry_run:
        async with engine.db.transaction():
            for rid in ids:
                machines_deleted += len(await engine.db.machines_of_request(rid))
            await engine.db.delete_requests(ids)
    return ids, machines_deleted


@handlers.on(CleanupOldRequestsCommand)
async def cleanup_old_requests(engine: Engine, op: CleanupOldRequestsCommand, call: Call) -> CleanupResult:
    principal = call.principal
    ids, machines = await _cleanup_requests(
        engine, principal, [s.value for s in op.statuses_to_cleanup], op.older_than_days, op.dry_run
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
async def cleanup_all_resources(engine: Engine, op: CleanupAllResourcesCommand, call: Call) -> CleanupResult:
    principal = call.principal
    if op.include_pending:
        before = utcnow() - timedelta(days=op.older_than_days)
        pending, _ = await engine.db.list_requests(statuses=[RequestStatus.PENDING.value], created_before=before)
        for r in await engine.changeable(principal, "request", pending, request_attrs, "POST"):
            await engine.db.update_request(
                r.model_copy(
                    update={
                        "status": RequestStatus.FAILED,
                        "message": "Failed by cleanup: pending too long.",
                        "completed_at": utcnow(),
                    }
                )
            )
    statuses = [s.value for s in RequestStatus if s.terminal]
    ids, machines = await _cleanup_requests(engine, principal, statuses, op.older_than_days, False)
    before = utcnow() - timedelta(days=op.older_than_days)
    gone, _ = await engine.db.list_machines(
        statuses=[MachineStatus.TERMINATED.value, MachineStatus.FAILED.value], updated_before=before
    )
    gone = await engine.changeable(principal, "machine", gone, machine_attrs, "POST")
    machines += await engine.db.delete_machines([m.machine_id for m in gone])
    try:  # provider leftovers of finished requests (AWS launch templates) go too
        orphans = await sweep_orphans(engine)
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
