"""How a request's machines and status follow what a provider reports: the fold and the settled status.

Machine states only follow the transition table; an illegal report is logged and ignored, never written.
Machines found at the provider that the store does not know are adopted, each named for the provider
instance that reported it. The reconciler (`reconciler.py`) and the launch across candidates (`offerings.py`)
both settle requests with these.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pluginsdk.models import Machine, MachineStatus, Request, RequestStatus, StatusReason, can_transition, utcnow

from ..providers.base import ProvisionedMachine

if TYPE_CHECKING:
    from ..deps import Deps

__all__ = ["apply_states", "fold_states", "merge", "settle_status"]

log = logging.getLogger("pluginsdk.reconciler")


def merge(m: Machine, pm: ProvisionedMachine) -> Machine | None:
    """The machine updated from the provider's view, or None when nothing changes."""
    update: dict[str, object] = {}
    if pm.status != m.status:
        if can_transition(m.status, pm.status):
            update["status"] = pm.status
            if pm.reason and m.status_reason != StatusReason.RETURNED_BEFORE_RUNNING:
                update["status_reason"] = pm.reason
        else:
            log.warning("ignored illegal transition of %s: %s -> %s", m.machine_id, m.status, pm.status)
    # a host name and private address are fixed once known: schedulers match machines by name
    for field in ("name", "ip_address", "public_ip_address", "instance_type"):
        value = getattr(pm, field)
        current = getattr(m, field)
        if value and value != current and (current is None or field == "public_ip_address"):
            update[field] = value
    if not update:
        return None
    update["updated_at"] = utcnow()
    return m.model_copy(update=update)


def apply_states(
    request: Request,
    stored: dict[str, Machine],
    seen: list[ProvisionedMachine],
    providers: dict[str, str] | None = None,
) -> list[Machine]:
    """Fold provider states into stored machines (adopting unknown ones, each with the provider instance that
    reported it: `providers`, machine id -> instance, else the request's); returns the changed machines."""
    changed: list[Machine] = []
    for pm in seen:
        m = stored.get(pm.machine_id)
        if m is None:
            m = Machine(
                machine_id=pm.machine_id,
                request_id=request.request_id,
                template_id=request.template_id or "",
                status=pm.status,
                name=pm.name,
                ip_address=pm.ip_address,
                public_ip_address=pm.public_ip_address,
                instance_type=pm.instance_type,
                provider_name=(providers or {}).get(pm.machine_id, request.provider_name),
                provider_api=request.provider_api,
                status_reason=pm.reason,
                created_at=pm.launched_at or utcnow(),
            )
            stored[m.machine_id] = m
            changed.append(m)
            continue
        new = merge(m, pm)
        if new is not None:
            stored[m.machine_id] = new
            changed.append(new)
    return changed


def _tally(request: Request, machines: list[Machine], unready: frozenset[str]) -> tuple[int, int, int, int, str]:
    """(up, pending, withdrawn, unfilled, note) of a provisioning request's machines. A machine the caller
    returned after it ran was delivered (it counts as up); one returned before it ran was withdrawn (neither
    up nor failed); one the provider could not start at all (capacity everywhere) is unfilled: known short,
    not awaited; a running machine that has not reported the readiness its template requires (`unready`) is
    still pending. The note is what the status message adds about withdrawn and unfilled machines."""
    withdrawn = sum(1 for m in machines if m.status_reason == StatusReason.RETURNED_BEFORE_RUNNING)
    up = sum(
        1
        for m in machines
        if (m.status is MachineStatus.RUNNING and m.machine_id not in unready)
        or (
            m.return_request_id
            and m.status_reason != StatusReason.RETURNED_BEFORE_RUNNING
            and m.status is not MachineStatus.FAILED
        )
    )
    pending = sum(
        1
        for m in machines
        if (m.status is MachineStatus.PENDING and m.status_reason != StatusReason.RETURNED_BEFORE_RUNNING)
        or m.machine_id in unready
    )
    unfilled = int(request.provider_data.get("unfilled") or 0)
    return up, pending, withdrawn, unfilled, _note(request, withdrawn, unfilled)


def _note(request: Request, withdrawn: int, unfilled: int) -> str:
    """What a status message adds about machines withdrawn and machines that could not start."""
    note = f", {withdrawn} returned before running" if withdrawn else ""
    if unfilled:
        note += f", {unfilled} could not start ({request.provider_data.get('unfilled_reason') or 'no capacity'})"
    return note


def settle_status(
    request: Request, machines: list[Machine], *, timed_out: bool, unready: frozenset[str] = frozenset()
) -> tuple[RequestStatus, str]:
    """The status a provisioning request should have given its machines: `completed` once enough run (and are
    ready, when the template requires it: `unready` are not); ended (`_ended`) once nothing is pending and
    every machine is accounted for, or on timeout; else `running` (still `pending` while the provider reports
    no machine)."""
    counts = _tally(request, machines, unready)
    up, pending, _, unfilled, note = counts
    if up >= request.count:
        return RequestStatus.COMPLETED, f"{up} of {request.count} machines running{note}."
    if (pending == 0 and len(machines) + unfilled >= request.count) or timed_out:
        return _ended(request, machines, counts, timed_out=timed_out)
    status = RequestStatus.RUNNING if machines else request.status
    return status, f"{up} of {request.count} machines running, {pending} pending{note}."


def _ended(
    request: Request, machines: list[Machine], counts: tuple[int, int, int, int, str], *, timed_out: bool
) -> tuple[RequestStatus, str]:
    """No machine left to wait for (or no time): `completed` when none failed, `cancelled` when all were
    withdrawn, `partial` when some run, else `failed`."""
    up, pending, withdrawn, unfilled, note = counts
    failed = len(machines) - up - pending - withdrawn + unfilled
    why = "timed out" if timed_out and pending else "finished"
    never_made = max(0, request.count - len(machines) - unfilled)  # timed out before the provider made them
    if not failed and not never_made and not (timed_out and pending):
        if up:
            return RequestStatus.COMPLETED, f"{up} of {request.count} machines running{note}."
        return RequestStatus.CANCELLED, f"Cancelled: all {withdrawn} machines were returned before running."
    if up:
        return RequestStatus.PARTIAL, f"Request {why}: {up} of {request.count} machines running, the rest failed{note}."
    reasons = [
        m.status_reason for m in machines if m.status_reason and m.status_reason != StatusReason.RETURNED_BEFORE_RUNNING
    ]
    return RequestStatus.FAILED, f"Request {why}: no machine came up" + (f" ({reasons[0]})." if reasons else ".")


async def fold_states(
    deps: Deps, request: Request, seen: list[ProvisionedMachine], providers: dict[str, str] | None = None
) -> dict[str, Machine]:
    """The request's stored machines with the provider's view folded in (`apply_states`), changes written."""
    stored = {m.machine_id: m for m in await deps.store.machines_of_request(request.request_id, for_update=True)}
    changed = apply_states(request, stored, seen, providers)
    if changed:
        await deps.store.upsert_machines(changed)
    return stored
