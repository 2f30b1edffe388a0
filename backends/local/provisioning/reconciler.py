"""Advance requests from what the provider reports.

Used on status reads, by `wait=True`, and by the background loop of
long-lived processes. Provider calls happen outside transactions; the store is
then re-read and updated in one transaction, so two processes reconciling the
same request cannot move it backwards. The provider's view is folded in by
`settling.py` (machine states only follow the transition table; machines the
store does not know — the engine died between launch and write — are adopted);
a request launched through candidates is observed per attempt (`provisioning/offerings.py`);
a request whose creator died before it called the provider (still `pending`,
nothing at the provider) is launched here (`launch`, which its creator calls too).

One actor per request: a reconciliation first claims the request (a lease,
backends/local/store/claims.py); when another process or task holds it, this
one does not call the provider and answers with what is stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pluginsdk.constants import RETURN_ID_PREFIX, new_request_id
from pluginsdk.errors import NotFoundError, ProviderError
from pluginsdk.models import (
    Machine,
    MachineStatus,
    Request,
    RequestStatus,
    RequestType,
    StatusReason,
    Template,
    can_transition,
    utcnow,
)

from ..providers.base import LaunchResult, ProviderDriver, ProvisionedMachine
from . import offerings, quotas, readiness
from .settling import apply_states, fold_states, merge, settle_status

if TYPE_CHECKING:
    from ..deps import Deps

__all__ = [
    "apply_states",
    "ended",
    "fold_states",
    "launch",
    "reconcile",
    "reconcile_active",
    "settle_status",
    "sweep_orphans",
]

log = logging.getLogger("pluginsdk.reconciler")


async def reconcile(deps: Deps, request: Request) -> Request:
    """Bring one request up to date with its provider; returns the stored result."""
    if request.dry_run or request.status.terminal:
        return request
    async with deps.store.claims.hold(request.request_id) as mine:
        if not mine:  # another actor is on it: what it writes is the answer
            return await deps.store.get_request(request.request_id) or request
        if request.request_type is RequestType.RETURN:
            return await _reconcile_return(deps, request)
        return await _reconcile_provision(deps, request)


async def _reconcile_provision(deps: Deps, request: Request) -> Request:
    """observe (the provider, outside the transaction) -> fold machine states -> settle the status -> record
    -> stop machines still pending at a timeout -> let the provider clean up after a finished request."""
    template = await deps.templates.get(request.template_id or "")
    rule = _boot_rule(template)
    request, seen, providers = await _observe(deps, request, template, rule)
    now = utcnow()
    async with deps.store.transaction():
        current = await deps.store.get_request(request.request_id, for_update=True)
        if current is None or current.status.terminal:
            return current or request
        stored = await fold_states(deps, current, seen, providers)
        waiting = await _unready(deps, rule, current, stored, seen)
        timed_out = now > current.created_at + timedelta(seconds=current.timeout)
        status, message = settle_status(current, list(stored.values()), timed_out=timed_out, unready=waiting)
        recorded = len(current.machine_ids)
        current = await _record(deps, current, now, status=status, message=message, machine_ids=list(stored))
        if len(current.machine_ids) > recorded:  # machines the launch did not report yet: they replace the reservation
            await quotas.settled(deps, current, len(current.machine_ids))
    if rule is not None and template is not None and not current.status.terminal:
        await readiness.enforce(
            deps, current, template, rule, machines=stored, waiting=set(waiting), terminate=terminate_machines
        )
    if status.terminal and timed_out:
        await _stop_pending(deps, current, stored.values())
    if current.status.terminal and not any(m.status.active for m in stored.values()):
        if offerings.has_offerings(current):
            await offerings.cleanup_attempts(deps, current)
        else:
            await _cleanup(await deps.providers.get(current.provider_name), current)
    return current


async def _observe(
    deps: Deps, request: Request, template: Template | None, rule: readiness.BootRule | None
) -> tuple[Request, list[ProvisionedMachine], dict[str, str] | None]:
    """The request and what its provider(s) report, with the instance of each machine when it has attempts;
    a replacement whose launcher died before launching it (readiness.py) is launched first."""
    if rule is not None and template is not None:
        request = await readiness.resume(deps, request, template)
    if offerings.has_offerings(request):  # launched through candidates (a launch that never started: `_launched`)
        return await offerings.observe(deps, request, template)
    driver = await deps.providers.get(request.provider_name)
    request, seen = await _launched(deps, driver, request, template)
    return request, seen, None


async def _unready(
    deps: Deps,
    rule: readiness.BootRule | None,
    request: Request,
    stored: dict[str, Machine],
    seen: list[ProvisionedMachine],
) -> frozenset[str]:
    """Running machines still to report the readiness their template requires (none when it requires none)."""
    if rule is None:
        return frozenset()
    return frozenset(await readiness.unready(deps, request.template_id or "", stored.values(), seen))


def _boot_rule(template: Template | None) -> readiness.BootRule | None:
    """The template's readiness requirement; a stored one that no longer reads is logged and ignored."""
    try:
        return readiness.rule_of(template)
    except ValueError as exc:
        log.warning("template %s: %s; its readiness is not checked", template.template_id if template else "", exc)
        return None


def ended(r: Request, status: RequestStatus, message: str) -> Request:
    """The request finished now with this status and message."""
    now = utcnow()
    return r.model_copy(update={"status": status, "message": message, "updated_at": now, "completed_at": now})


async def launch(deps: Deps, driver: ProviderDriver, request: Request, template: Template) -> Request:
    """Launch a recorded, pending request's machines and record them; returns the stored request.

    Its creator calls this, and so does whoever takes its claim over from a creator that died before it
    called the provider (`_launched`). Provider launches are idempotent per request (AWS client tokens and
    group names, the local provider's numbered machines): a launch the dead creator made is found again,
    not repeated. A template with candidates launches through them (`provisioning/offerings.py`).
    """
    if template.offerings:
        return await offerings.launch_offerings(deps, request, template)
    return await _settle_launch(deps, request, await _launch(deps, driver, request, template))


async def _launch(deps: Deps, driver: ProviderDriver, request: Request, template: Template) -> LaunchResult:
    """The provider's launch; a refusal fails the recorded request (`failed`, the provider's message) and is raised."""
    try:
        return await driver.launch(request, template, request.count)
    except ProviderError as exc:
        await deps.store.update_request(ended(request, RequestStatus.FAILED, f"Provider error: {exc.message}"))
        exc.details.setdefault("request_id", request.request_id)
        raise


async def _settle_launch(deps: Deps, request: Request, launched: LaunchResult) -> Request:
    """The launched machines recorded and the request's first status settled (`running` while the provider
    reports no machine yet)."""
    async with deps.store.transaction():
        current = await deps.store.get_request(request.request_id, for_update=True) or request
        stored = await fold_states(deps, current, launched.machines)
        status, message = settle_status(current, list(stored.values()), timed_out=False)
        if not stored:
            status = RequestStatus.RUNNING
        now = utcnow()
        current = current.model_copy(
            update={
                "status": status,
                "message": launched.message or message,
                "machine_ids": list(stored),
                "provider_data": {**current.provider_data, **launched.provider_data},
                "updated_at": now,
                "completed_at": now if status.terminal else None,
            }
        )
        await quotas.settled(deps, current, len(stored))
        await deps.store.update_request(current)
    return current


async def _launched(
    deps: Deps, driver: ProviderDriver, request: Request, template: Template | None
) -> tuple[Request, list[ProvisionedMachine]]:
    """The request and what the provider reports for it, launching it first if its creator never did.

    A request leaves `pending` when its creator records the launch, under the claim it holds from insert to
    record; pending under our claim, with nothing at the provider, means the creator died (or outlived its
    lease) before it called the provider. Left alone, the request would wait out its timeout with no machine
    and fail. Machines the provider does report are adopted by the caller (`fold_states`), never relaunched.
    """
    seen = await driver.describe(request, template)
    if seen or request.status is not RequestStatus.PENDING:  # read before our claim: re-read below
        return request, seen
    request = await _launch_unrecorded(deps, driver, request, template)
    return request, await driver.describe(request, template)


async def _launch_unrecorded(
    deps: Deps, driver: ProviderDriver, request: Request, template: Template | None
) -> Request:
    """The request launched, if it is still pending, in time and its template known."""
    current = await deps.store.get_request(request.request_id) or request
    late = utcnow() > current.created_at + timedelta(seconds=current.timeout)  # it is settled as timed out
    if current.status is not RequestStatus.PENDING or template is None or late:
        return current
    log.warning("request %s: its launch was never recorded (the creator died); launching it", current.request_id)
    try:
        return await launch(deps, driver, current, template)
    except ProviderError:  # recorded as the request's failure
        return await deps.store.get_request(current.request_id) or current


async def _stop_pending(deps: Deps, request: Request, machines: Iterable[Machine]) -> None:
    """A request that timed out stops its machines still starting."""
    if pending := [m for m in machines if m.status is MachineStatus.PENDING]:
        await terminate_machines(deps, request, pending)


async def _record(
    deps: Deps, current: Request, now: datetime, *, status: RequestStatus, message: str, machine_ids: list[str]
) -> Request:
    """The request with its settled status, message and machine ids written, when anything changed; a status
    the transition table forbids is logged and not taken."""
    if status == current.status and message == current.message and machine_ids == current.machine_ids:
        return current
    if not can_transition(current.status, status):
        log.warning("ignored illegal request transition %s -> %s", current.status, status)
        status = current.status
    current = current.model_copy(
        update={
            "status": status,
            "message": message,
            "machine_ids": machine_ids,
            "updated_at": now,
            "completed_at": now if status.terminal else None,
        }
    )
    await deps.store.update_request(current)
    return current


async def _cleanup(driver: object, request: Request) -> None:
    """Let the provider drop what a finished request no longer needs (AWS: its launch template)."""
    cleanup = getattr(driver, "cleanup", None)
    if cleanup is None:
        return
    try:
        await cleanup(request)
    except Exception:
        log.exception("cleaning up after %s failed", request.request_id)


async def sweep_orphans(deps: Deps) -> list[str]:
    """Remove provider leftovers (AWS launch templates) tagged with a request that is finished and holds
    no machine — e.g. the engine died between creating a launch template and creating its fleet.
    Leftovers of requests this store does not know are kept: they may be another deployment's."""
    driver = await deps.providers.get()
    listing = getattr(driver, "tagged_launch_templates", None)
    if listing is None:
        return []
    tagged: dict[str, str] = await listing()
    if not tagged:
        return []
    requests = await deps.store.get_requests(sorted(set(tagged.values())))
    machines = await deps.store.machines_of_requests(list(requests))
    removed = []
    for name, request_id in tagged.items():
        r = requests.get(request_id)
        if r is None or not r.status.terminal or any(m.status.active for m in machines.get(request_id, [])):
            continue
        await driver.delete_launch_template(name)  # type: ignore[attr-defined]
        removed.append(name)
    if removed:
        log.info("removed %d orphaned launch templates: %s", len(removed), ", ".join(removed))
    return removed


async def terminate_machines(deps: Deps, request: Request, machines: list[Machine]) -> None:
    """Ask the provider to take machines of one provisioning request back and record what it says, on the
    machines as stored when the answer is written (another process may have claimed or moved them since
    the caller read them)."""
    if offerings.has_offerings(request):
        states = await offerings.terminate_by_attempt(deps, request, machines)
    else:
        states = await (await deps.providers.get(request.provider_name)).terminate(request, machines)
    now = utcnow()
    async with deps.store.transaction():
        stored = await deps.store.get_machines([m.machine_id for m in machines], for_update=True)
        updated = []
        for m in stored.values():
            new = states.get(m.machine_id, MachineStatus.SHUTTING_DOWN)
            if can_transition(m.status, new) and new != m.status:
                updated.append(m.model_copy(update={"status": new, "updated_at": now}))
        if updated:
            await deps.store.upsert_machines(updated)


async def _reconcile_return(deps: Deps, ret: Request) -> Request:
    """observe (the provider, asking again for machines it still runs) -> fold machine states (one no
    longer found at the provider is terminated) -> settle the status -> record."""
    by_request: dict[str, list[Machine]] = defaultdict(list)
    for m in await deps.store.machines_of_return(ret.request_id):
        if not m.status.gone:
            by_request[m.request_id].append(m)
    seen = await _observe_return(deps, by_request)
    now = utcnow()
    async with deps.store.transaction():
        current = await deps.store.get_request(ret.request_id, for_update=True)
        if current is None or current.status.terminal:
            return current or ret
        stored = {m.machine_id: m for m in await deps.store.machines_of_return(ret.request_id, for_update=True)}
        changed = _fold_return(stored, seen, by_request)
        if changed:
            await deps.store.upsert_machines(changed)
        timed_out = now > current.created_at + timedelta(seconds=current.timeout)
        status, message = _settle_return(current, list(stored.values()), timed_out=timed_out)
        current = await _record(deps, current, now, status=status, message=message, machine_ids=current.machine_ids)
    return current


async def _observe_return(deps: Deps, by_request: dict[str, list[Machine]]) -> dict[str, ProvisionedMachine]:
    """What the provider reports of the return's machines, per provisioning request. Machines it still runs
    although they were claimed for this return: the process that claimed them died before it asked the
    provider (we hold the claim now), so ask again."""
    seen: dict[str, ProvisionedMachine] = {}
    for request_id, group in by_request.items():
        origin = await deps.store.get_request(request_id)
        if origin is None:
            continue
        found = {pm.machine_id: pm for pm in await _described(deps, origin)}
        missed = [m for m in group if (f := found.get(m.machine_id)) is not None and f.status.active]
        if missed:
            await terminate_machines(deps, origin, missed)
            found.update({pm.machine_id: pm for pm in await _described(deps, origin)})
        seen.update(found)
    return seen


async def _described(deps: Deps, origin: Request) -> list[ProvisionedMachine]:
    """What the provider(s) of a provisioning request report of its machines."""
    if offerings.has_offerings(origin):
        return (await offerings.observe(deps, origin, None))[1]
    return await (await deps.providers.get(origin.provider_name)).describe(origin, None)


def _fold_return(
    stored: dict[str, Machine], seen: dict[str, ProvisionedMachine], asked: dict[str, list[Machine]]
) -> list[Machine]:
    """Fold the provider's view into the return's stored machines; one it was asked about and no longer
    reports is terminated. Returns the changed machines."""
    changed: list[Machine] = []
    for mid, m in stored.items():
        pm: ProvisionedMachine | None = seen.get(mid)
        if pm is None and not m.status.gone and m.request_id in asked:
            pm = ProvisionedMachine(machine_id=mid, status=MachineStatus.TERMINATED, reason="not found at provider")
        if pm is not None and (new := merge(m, pm)) is not None:
            stored[mid] = new
            changed.append(new)
    return changed


def _settle_return(current: Request, machines: list[Machine], *, timed_out: bool) -> tuple[RequestStatus, str]:
    """`completed` when every machine is gone; `partial` (some gone) or `failed` when the provider refused
    some or time ran out; else `running`."""
    gone = sum(1 for m in machines if m.status.gone)
    refused: dict[str, dict[str, str]] = current.provider_data.get("failed_machines") or {}
    total = len(machines) + len(refused)
    status = current.status
    if gone >= len(machines) and not refused:
        status = RequestStatus.COMPLETED
    elif gone >= len(machines) or timed_out:
        status = RequestStatus.PARTIAL if gone else RequestStatus.FAILED
    elif status is RequestStatus.PENDING:
        status = RequestStatus.RUNNING
    message = f"{gone} of {total} machines terminated."
    if refused:
        first = next(iter(refused.values()))
        message += (
            f" The provider failed to take back {len(refused)} ({str(first.get('reason')).rstrip('.')});"
            " they stay in use and can be returned again."
        )
    elif timed_out and gone < total:
        message += f" Timed out after {current.timeout} s."
    return status, message


_STAYS = (MachineStatus.RUNNING, MachineStatus.STOPPED)
"""What a reclaimed machine may still be: running (told to go: a rebalance, a scheduled change) or kept stopped."""


async def record_reclaimed(deps: Deps) -> list[str]:
    """Machines the cloud took back on its own become a completed return request (listed by getReturnRequests),
    one per provider instance that holds machines (and the default one)."""
    names = dict.fromkeys([deps.settings.provider.default_instance(), *await deps.store.count_active_by_provider()])
    taken: list[str] = []
    for name in names:
        try:
            driver = await deps.providers.get(name)
        except NotFoundError:  # machines of an instance no longer configured: nothing to ask
            continue
        taken += await _record_reclaimed_of(deps, driver)
    return taken


async def _record_reclaimed_of(deps: Deps, driver: ProviderDriver) -> list[str]:
    reclaimed = await driver.reclaimed()
    if not reclaimed:
        return []
    known = await deps.store.get_machines([pm.machine_id for pm in reclaimed])
    fresh = await _fresh(deps, reclaimed, known)
    if not fresh:
        return []
    end = getattr(driver, "end_interrupted", None)
    if end is not None:  # a machine being stopped by its interruption is terminated (or kept, by its setting)
        fresh = await end(fresh)
    now = utcnow()
    ret_id = new_request_id(RETURN_ID_PREFIX)
    marked = [
        known[pm.machine_id].model_copy(
            update={
                # a rebalance recommendation or scheduled change leaves it running (the scheduler returns it), a
                # machine kept stopped is shown stopped, any other is gone
                "status": pm.status if pm.status in _STAYS else MachineStatus.TERMINATED,
                "return_request_id": ret_id,
                "status_reason": f"{StatusReason.RECLAIMED}: {pm.reason or 'spot interruption'}",
                "updated_at": now,
            }
        )
        for pm in fresh
    ]
    held = {m.machine_id: known[m.machine_id].return_request_id for m in marked}
    async with deps.store.transaction():  # a machine a return claimed meanwhile stays that return's
        taken = await deps.store.reassign_machines(marked, held)
        if not taken:
            return []
        ret = Request(
            request_id=ret_id,
            request_type=RequestType.RETURN,
            status=RequestStatus.COMPLETED,
            count=len(taken),
            provider_name=driver.name,
            message=f"{StatusReason.RECLAIMED}: {fresh[0].reason or 'spot interruption'}.",
            machine_ids=[m.machine_id for m in taken],
            completed_at=now,
            created_by="provider",
        )
        await deps.store.insert_request(ret)
    return ret.machine_ids


async def _fresh(
    deps: Deps, reclaimed: list[ProvisionedMachine], known: dict[str, Machine]
) -> list[ProvisionedMachine]:
    """The reports not recorded yet, one per machine: of a machine no return holds, or a machine still running
    under the provider's own return (a rebalance recommendation) that the provider now takes away."""
    holders = sorted({m.return_request_id for m in known.values() if m.return_request_id and m.status.active})
    by_provider = {rid for rid, r in (await deps.store.get_requests(holders)).items() if r.created_by == "provider"}
    fresh: dict[str, ProvisionedMachine] = {}
    for pm in reclaimed:
        m = known.get(pm.machine_id)
        if m is None or pm.machine_id in fresh:
            continue
        again = m.return_request_id in by_provider and m.status is MachineStatus.RUNNING and pm.status is not m.status
        if m.return_request_id is None or again:
            fresh[pm.machine_id] = pm
    return list(fresh.values())


async def reconcile_active(deps: Deps) -> int:
    """One pass over every active request (and reclaimed machines); returns how many were looked at."""
    ids = await deps.store.active_request_ids()
    for request_id in ids:
        await asyncio.sleep(0)  # SQLite and the local provider never suspend: let requests be served between items
        request = await deps.store.get_request(request_id)
        if request is not None:
            try:
                await reconcile(deps, request)
            except Exception:
                log.exception("reconciling %s failed", request_id)
    try:
        await record_reclaimed(deps)
    except Exception:
        log.exception("checking reclaimed machines failed")
    try:
        await sweep_orphans(deps)
    except Exception:
        log.exception("sweeping orphaned provider resources failed")
    return len(ids)
