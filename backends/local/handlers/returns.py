"""Return request handlers: validate -> select -> screen -> claim -> terminate -> settle (docs/design.md)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from pluginsdk.constants import RETURN_ID_PREFIX, new_request_id
from pluginsdk.errors import NotFoundError, ProviderError, ValidationError
from pluginsdk.models import (
    Machine,
    MachineStatus,
    Request,
    RequestStatus,
    RequestType,
    ReturnRequestCreated,
    SkippedMachine,
    StatusReason,
    utcnow,
)
from pluginsdk.operations import CreateReturnRequestCommand
from pluginsdk.principal import Principal
from pluginsdk.words import counted

from ..attributes import machine_attrs, request_attrs
from ..deps import Deps
from ..provisioning.reconciler import reconcile, terminate_machines
from ..registry import HandlerTable
from .request_records import load_request

if TYPE_CHECKING:
    from ..call import Call


handlers = HandlerTable(Deps)


async def machines_by_name(deps: Deps, names: list[str]) -> dict[str, Machine]:
    """Machines by host name (HostFactory and LSF return hosts by name). A name reused after its machine
    went away names the live machine; among several, the newest."""
    out: dict[str, Machine] = {}
    for m in sorted(await deps.store.machines_named(names), key=lambda m: (m.created_at, m.machine_id)):
        prior = out.get(m.name or "")
        if prior is None or not m.status.gone or prior.status.gone:
            out[m.name or ""] = m
    return out


@handlers.on(CreateReturnRequestCommand)
async def create_return_request(deps: Deps, op: CreateReturnRequestCommand, call: Call) -> ReturnRequestCreated:
    """validate -> select -> screen -> claim -> terminate -> settle; a retry with the same request id answers
    the first result (docs/design.md, "Requests, machines, reconciliation")."""
    principal = call.principal
    _validate_return(op)
    if op.request_id and (existing := await deps.store.get_request(op.request_id)) is not None:
        return ReturnRequestCreated(
            request_id=existing.request_id,
            created_request_ids=[existing.request_id],
            processed_machines=existing.machine_ids,
            message="Return request already submitted (idempotent retry).",
        )
    wanted, machines = await _select_returned(deps, op, principal)
    chosen, skipped = await _screen(deps, op, principal, wanted, machines)
    if op.dry_run or not chosen:
        return await _nothing_returned(deps, op, principal, chosen, skipped)
    ret_id = op.request_id or new_request_id(RETURN_ID_PREFIX)
    # one actor per request: no other process reconciles this return while its machines are handed back
    async with deps.store.claims.hold(ret_id):
        ret, chosen, lost = await _claim(deps, op, principal, ret_id, chosen)
        skipped += lost
        if ret is None:
            return await _nothing_returned(deps, op, principal, [], skipped)
        failures = await _terminate(deps, chosen)
    await (release_failed(deps, ret_id, failures) if failures else reconcile(deps, ret))
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
    deps: Deps, op: CreateReturnRequestCommand, principal: Principal
) -> tuple[list[str], dict[str, Machine]]:
    """The machine ids asked for (in order, once each) and the machines found by id: every active machine
    with `return_all`; else the machines of `from_request_id`, then each entry as a machine id or, failing
    that, a host name (IBM makes only `name` mandatory)."""
    if op.return_all:
        found, _ = await deps.store.list_machines(statuses=[s.value for s in MachineStatus if s.active])
        machines = {m.machine_id: m for m in found}
        return list(machines), machines
    asked = (
        [*await _machines_of(deps, op.from_request_id, principal), *op.machine_ids]
        if op.from_request_id
        else op.machine_ids
    )
    machines = await deps.store.get_machines(asked)
    named = await machines_by_name(deps, [i for i in asked if i not in machines])
    wanted = []
    for given in asked:
        m = machines.get(given) or named.get(given)
        if m is not None and given not in machines:
            machines[m.machine_id] = m
        wanted.append(m.machine_id if m is not None else given)
    return list(dict.fromkeys(wanted)), machines


async def _machines_of(deps: Deps, request_id: str, principal: Principal) -> list[str]:
    """The machine ids of a provisioning request the caller may read (one it may not read is not found)."""
    r = await deps.store.get_request(request_id)
    if r is None or not await deps.access.visible(principal, "request", [r], request_attrs):
        raise NotFoundError("request", request_id, f"Request '{request_id}' not found.")
    if r.request_type is not RequestType.PROVISION:
        raise ValidationError(
            f"'{request_id}' is a return request; from_request_id takes the provisioning request whose machines "
            "to return.",
            details={"field": "from_request_id", "value": request_id, "expected": "a provisioning request id"},
        )
    return [m.machine_id for m in await deps.store.machines_of_request(request_id)]


async def _screen(
    deps: Deps,
    op: CreateReturnRequestCommand,
    principal: Principal,
    wanted: list[str],
    machines: dict[str, Machine],
) -> tuple[list[Machine], list[SkippedMachine]]:
    """The machines to return, and the others skipped with why (one the caller may not read, or may read but not
    return, is "not found")."""
    returnable = await deps.access.changeable(principal, "machine", machines.values(), machine_attrs, "POST")
    allowed = {m.machine_id for m in returnable}
    held = sorted(
        {
            m.return_request_id
            for m in machines.values()
            if m.machine_id in allowed and m.return_request_id and not m.status.gone
        }
    )
    open_returns = {rid for rid, r in (await deps.store.get_requests(held)).items() if not r.status.terminal}
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
    deps: Deps,
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
            request_id=op.request_id or new_request_id(RETURN_ID_PREFIX),
            request_type=RequestType.RETURN,
            status=RequestStatus.COMPLETED,
            count=0,
            machine_ids=[],  # it took none back: each machine stays in the one return that did (its skip says which)
            created_by=principal.user_id,
            completed_at=utcnow(),
            message=f"No active machine to return: {len(gone)} already gone.",
        )
        await deps.store.insert_request(ret)
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
    deps: Deps, op: CreateReturnRequestCommand, principal: Principal, ret_id: str, chosen: list[Machine]
) -> tuple[Request | None, list[Machine], list[SkippedMachine]]:
    """Record the return request and mark its machines, in one transaction. The store decides each machine
    (`reassign_machines`: taken only while it is still held as it was screened), so of two returns racing
    for a machine — any process, SQLite or PostgreSQL — one takes it and the other skips it. Returns (the
    return or None when nothing is left, the claimed machines, those lost to another claim)."""
    screened = {m.machine_id: m.return_request_id for m in chosen}
    async with deps.store.transaction():
        latest = await deps.store.get_machines(list(screened), for_update=True)  # their current state, locked
        current = [m for mid in screened if (m := latest.get(mid)) is not None and m.return_request_id == screened[mid]]
        claimed = await deps.store.reassign_machines(_marked(ret_id, current), screened)
        taken = {m.machine_id for m in claimed}
        if len(taken) < len(screened):
            latest.update(await deps.store.get_machines([mid for mid in screened if mid not in taken]))
        lost = [_lost(mid, latest.get(mid)) for mid in screened if mid not in taken]
        if not claimed:
            return None, [], lost
        origins = await deps.store.get_requests(sorted({m.request_id for m in claimed}))
        ret = _return_record(op, principal, ret_id, claimed, origins)
        await deps.store.insert_request(ret)
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
    withdrawn = {"status_reason": StatusReason.RETURNED_BEFORE_RUNNING.value}
    return [
        m.model_copy(
            update={
                "return_request_id": ret_id,
                "updated_at": now,
                **(withdrawn if m.status is MachineStatus.PENDING else {}),
            }
        )
        for m in machines
    ]


async def _terminate(deps: Deps, machines: list[Machine]) -> dict[str, str]:
    """Hand the claimed machines back, per provisioning request; returns those the provider refused, with why."""
    groups: dict[str, list[Machine]] = defaultdict(list)
    for m in machines:
        groups[m.request_id].append(m)
    failures: dict[str, str] = {}
    for request_id, group in groups.items():
        origin = await deps.store.get_request(request_id)
        if origin is None:
            continue
        try:
            await terminate_machines(deps, origin, group)
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


async def release_failed(deps: Deps, ret_id: str, failures: dict[str, str]) -> Request:
    """The provider refused to take these machines back: they leave the return (returnable again, also
    with `machines return --force`), the return remembers them as failed, and it ends at once when
    nothing else is left to wait for (`failed`, or `partial` when some machines did go)."""
    now = utcnow()
    async with deps.store.transaction():  # the request's row, then its machines': the order every writer locks
        ret = await load_request(deps, ret_id, for_update=True)
        stuck = await deps.store.get_machines(list(failures), for_update=True)
        released = [
            m.model_copy(
                update={
                    "return_request_id": None,
                    "updated_at": now,
                    # its launch was not stopped after all: no longer withdrawn
                    "status_reason": (
                        None if m.status_reason == StatusReason.RETURNED_BEFORE_RUNNING else m.status_reason
                    ),
                }
            )
            for m in stuck.values()
            if m.return_request_id == ret_id
        ]
        await deps.store.reassign_machines(released, {m.machine_id: ret_id for m in released})
        failed: dict[str, dict[str, str | None]] = dict(ret.provider_data.get("failed_machines") or {})
        for mid, reason in failures.items():  # a machine still there keeps its addresses (scheduler outputs)
            m = stuck.get(mid)
            failed[mid] = {"name": m.name if m else None, "reason": reason}
            if m is not None:
                failed[mid] |= {"ip": m.ip_address, "public_ip": m.public_ip_address}
        ret = ret.model_copy(
            update={"provider_data": {**ret.provider_data, "failed_machines": failed}, "updated_at": now}
        )
        await deps.store.update_request(ret)
    return await reconcile(deps, ret)
