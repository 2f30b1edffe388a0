"""Request reads: one request, a status poll, the listings (brought up to date from the provider) and the summary."""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import TYPE_CHECKING

from pluginsdk.errors import NotFoundError, ProviderError, ValidationError
from pluginsdk.models import (
    Request,
    RequestList,
    RequestStatus,
    RequestStatusList,
    RequestSummary,
    RequestType,
    utcnow,
)
from pluginsdk.operations import (
    GetRequestQuery,
    GetRequestStatusQuery,
    GetRequestSummaryQuery,
    ListActiveRequestsQuery,
    ListRequestsQuery,
    ListReturnRequestsQuery,
)
from pluginsdk.principal import Principal
from pluginsdk.words import counted

from ..attributes import request_attrs
from ..deps import Deps
from ..provisioning.reconciler import reconcile, record_reclaimed
from ..registry import HandlerTable
from .request_records import fresh, load_request, with_machines_all

if TYPE_CHECKING:
    from pluginsdk.models.plans import AccessPlan

    from ..call import Call


handlers = HandlerTable(Deps)

log = logging.getLogger("pluginsdk.requests")

ACTIVE = (RequestStatus.PENDING.value, RequestStatus.RUNNING.value)


@handlers.on(GetRequestQuery)
async def get_request(deps: Deps, op: GetRequestQuery, call: Call) -> Request:
    r = await fresh(deps, call.stored or await load_request(deps, op.request_id), lightweight=op.lightweight)
    return (await with_machines_all(deps, [r], read_here=True))[0] if op.long else r


@handlers.on(GetRequestStatusQuery)
async def get_request_status(deps: Deps, op: GetRequestStatusQuery, call: Call) -> RequestStatusList:
    principal = call.principal
    found = await deps.store.get_requests(op.request_ids)
    visible = {
        r.request_id for r in await deps.access.visible(principal, "request", list(found.values()), request_attrs)
    }
    out: list[Request] = []
    missing: list[str] = []
    for rid in op.request_ids:
        r = found.get(rid)
        if r is None or rid not in visible:
            missing.append(rid)
            continue
        out.append(await fresh(deps, r))
    if missing and len(op.request_ids) == 1 and not op.report_missing:
        raise NotFoundError("request", missing[0], f"Request '{missing[0]}' not found.")
    if op.long:
        out = await with_machines_all(deps, out, read_here=True)
    return RequestStatusList(
        requests=out,
        not_found=missing,
        message="" if not missing else f"{len(missing)} request(s) not found: {', '.join(missing[:5])}",
    )


LIST_REFRESH_MAX = 50
"""Most unfinished requests one listing brings up to date from the provider (the rest: the background loop)."""
LIST_REFRESH_SECONDS = 2.0
LIST_REFRESH_ROUNDS = 4
"""Most times the active listing's first page reads its window again after requests in it finished."""


async def refresh_listed(deps: Deps, requests: list[Request]) -> tuple[list[Request], int]:
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
                    r = await reconcile(deps, r)
                except ProviderError as exc:
                    log.warning("refreshing %s failed: %s", r.request_id, exc.message)
                    stale += 1
                done += 1
            else:
                stale += 1
        out.append(r)
    return out, stale


async def _listing(
    deps: Deps,
    principal: Principal,
    requests: list[Request],
    total: int,
    *,
    stale: int | None = None,
) -> RequestList:
    shown = await deps.access.visible(principal, "request", requests, request_attrs)
    if len(shown) != len(requests):
        total -= len(requests) - len(shown)
    if stale is None:
        shown, stale = await refresh_listed(deps, shown)
    message = counted(total, "request")
    if stale:
        message += f"; {stale} unfinished not refreshed from the provider (a status read refreshes them)"
    return RequestList(requests=shown, total_count=total, message=message)


@handlers.on(ListRequestsQuery)
async def list_requests(deps: Deps, op: ListRequestsQuery, call: Call) -> RequestList:
    principal = call.principal
    items, total = await deps.store.list_requests(
        statuses=[op.status.value] if op.status else None,
        template_id=op.template_id,
        request_type=op.request_type,
        limit=op.limit,
        offset=op.offset,
        access=await deps.access.readable(principal, "request"),
    )
    return await _listing(deps, principal, items, total)


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
async def list_active_requests(deps: Deps, op: ListActiveRequestsQuery, call: Call) -> RequestList:
    """Pages over one view: the requests active at `as_of` (docs/rest.md). The first page (no `as_of`) brings
    its window up to date from the provider first, then takes the view; a request finishing during the walk
    stays in it with its status, so every page is full and every total the same."""
    principal = call.principal
    filters = _filters(op.filter_expressions)
    access = await deps.access.readable(principal, "request")
    as_of, stale = datetime.fromisoformat(op.as_of) if op.as_of else None, None
    if as_of is None and not op.all_resources:
        stale = await _refresh_window(deps, op, access)
        as_of = utcnow()
    items, total = await deps.store.list_requests(
        provider_name=op.provider_name,
        limit=None if filters else op.limit,
        offset=0 if filters else op.offset,
        access=access,
        active_as_of=None if op.all_resources else as_of,
    )
    if filters:

        def keep(r: Request) -> bool:
            return all((str(getattr(r, f) or "") == v) != neg for f, neg, v in filters)

        items = [r for r in items if keep(r)]
        total = len(items)
        items = items[op.offset : op.offset + op.limit]
    listed = await _listing(deps, principal, items, total, stale=stale)
    if op.all_resources or as_of is None:
        return listed
    return listed.model_copy(update={"as_of": as_of.isoformat(timespec="microseconds")})


async def _refresh_window(deps: Deps, op: ListActiveRequestsQuery, access: AccessPlan | None) -> int:
    """Reconcile the requests of the first page's window until it holds only active ones (bounded like any
    listing's refresh); how many could not be refreshed."""
    seen: set[str] = set()
    stale = 0
    for _ in range(LIST_REFRESH_ROUNDS):
        items, _total = await deps.store.list_requests(
            statuses=ACTIVE, provider_name=op.provider_name, limit=op.limit, offset=op.offset, access=access
        )
        fresh_items = [r for r in items if r.request_id not in seen]
        if not fresh_items:
            break
        seen |= {r.request_id for r in fresh_items}
        refreshed, stale = await refresh_listed(deps, fresh_items)
        if all(not r.status.terminal for r in refreshed):
            break
    return stale


@handlers.on(ListReturnRequestsQuery)
async def list_return_requests(deps: Deps, op: ListReturnRequestsQuery, call: Call) -> RequestList:
    principal = call.principal
    try:  # machines the cloud took back (spot interruptions) are listed as return requests too
        await record_reclaimed(deps)
    except ProviderError as exc:
        log.warning("checking reclaimed machines failed: %s", exc.message)
    items, total = await deps.store.list_requests(
        statuses=[op.status.value] if op.status else None,
        request_type=RequestType.RETURN.value,
        provider_name=op.provider_name,
        limit=None if op.machine_names else op.limit,
        offset=0 if op.machine_names else op.offset,
        access=await deps.access.readable(principal, "request"),
    )
    items, stale = await refresh_listed(deps, items)
    if op.machine_names:
        wanted = set(op.machine_names)
        items = await with_machines_all(deps, items)
        items = [
            r for r in items if wanted & ({m.machine_id for m in r.machines} | {m.name for m in r.machines if m.name})
        ]
        total = len(items)
        items = items[op.offset : op.offset + op.limit]
    else:
        items = await with_machines_all(deps, items)
    return await _listing(deps, principal, items, total, stale=stale)


@handlers.on(GetRequestSummaryQuery)
async def get_request_summary(deps: Deps, op: GetRequestSummaryQuery, call: Call) -> RequestSummary:
    by_status = await deps.store.count_requests_by("status", op.template_id)
    by_type = await deps.store.count_requests_by("request_type", op.template_id)
    return RequestSummary(
        total_requests=sum(by_status.values()),
        by_status=by_status,
        by_type=by_type,
        machines_by_status=await deps.store.count_machines_by_status(),
        message=f"{sum(by_status.values())} requests",
    )
