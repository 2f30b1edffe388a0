"""Quotas, checked when a request is made (docs/providers.md): machines of a template at once
(`Template.max_active`), machines of a provider instance at once (`provider.quotas.max_active`), and machines a
user requests within a window (`provider.quotas.machines_per_user` per `window_seconds`).

A refusal is TooManyRequestsError (429, `Retry-After`) whose details say which quota, its limit, what is in
use and when capacity frees: the exact time for the window (its oldest requests leave it), for the limits at
once `provider.quotas.retry_seconds` (machines free when they are returned). Machines count while they are
active (pending, running, stopping, stopped), and so do the machines recorded requests reserve until their
launch is recorded (`store/quotas.py`): the check, the request and its reservation are one transaction, so
servers sharing a store hold a quota exactly and a refused request records nothing. A candidate whose
instance is at its quota is passed over like one cooling down, and a launch asks an instance for no more than
its room (`take`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import TooManyRequestsError
from pluginsdk.models import Template, utcnow

if TYPE_CHECKING:
    from pluginsdk.models import Request

    from ..deps import Deps

__all__ = ["check_quotas", "reserve", "settled", "take"]


async def check_quotas(deps: Deps, template: Template, user_id: str, count: int, provider: str) -> None:
    """Refuse (429) a request of `count` machines that a quota does not leave room for (a dry run: nothing
    is recorded, nothing held)."""
    await _check(deps, template, user_id, count, provider)


async def reserve(deps: Deps, request: Request, template: Template) -> None:
    """Record `request` with its reservation, or refuse it (429) with nothing recorded: one transaction, its
    quota subjects locked, so concurrent requests on any server are counted one after another."""
    user_id, count = request.created_by or "", request.count
    subjects = _subjects(deps, template, user_id, request.provider_name)
    if not subjects:  # no quota applies: the request alone is recorded, as any other write
        await deps.store.insert_request(request)
        return
    names = _candidates(template, request.provider_name)
    if len(names) == 1 and not subjects[-1].startswith("user:"):
        # one candidate, no window: the check rides on the request's insert (PostgreSQL: one statement)
        limits = {s: (_limit(deps, template, s), count) for s in subjects}
        recorded, counts = await deps.store.insert_request_within(request, {names[0]: count}, limits)
        if recorded:
            return
        in_template = counts.get(f"template:{template.template_id}", 0)
        _plan(
            deps,
            template,
            count,
            names,
            in_template=in_template,
            held={n: counts.get(f"provider:{n}", 0) for n in names},
        )
    async with deps.store.transaction():
        await deps.store.quotas.lock(s for s in subjects if s.startswith("user:"))  # the others: their counts
        shares = await _check(deps, template, user_id, count, request.provider_name, lock=True)
        await deps.store.insert_request(request)
        await deps.store.quotas.record(request.request_id, template.template_id, shares)


async def take(deps: Deps, request: Request, provider: str, needed: int) -> int | None:
    """How many of `needed` machines `request` may launch on `provider` now (None: the instance has no quota),
    held for it until its launch is recorded."""
    limit = deps.settings.provider.quotas.max_active.get(provider)
    if limit is None:
        return None
    if (await deps.store.quotas.reserved(request.request_id)).get(provider, 0) >= needed:
        return needed  # held there already, and counted by every check since it was recorded: no lock, no count
    async with deps.store.transaction():
        return await deps.store.quotas.take(request.request_id, request.template_id or "", provider, limit, needed)


async def settled(deps: Deps, request: Request, recorded: int) -> None:
    """`recorded` machines of the request are in the store (written in the caller's transaction): its
    reservation becomes them, and what the provider has not reported yet stays reserved until it reports
    them or the request finishes."""
    outstanding = 0 if request.status.terminal else max(0, request.count - recorded)
    await deps.store.quotas.settle(request.request_id, request.template_id or "", request.provider_name, outstanding)


def _subjects(deps: Deps, template: Template, user_id: str, provider: str) -> list[str]:
    """The quota subjects a request of `template` by `user_id` is counted against."""
    quotas = deps.settings.provider.quotas
    subjects = [f"template:{template.template_id}"] if template.max_active is not None else []
    subjects += [f"provider:{n}" for n in _candidates(template, provider) if n in quotas.max_active]
    if quotas.machines_per_user is not None:
        subjects.append(f"user:{user_id}")
    return subjects


def _candidates(template: Template, provider: str) -> list[str]:
    return list(dict.fromkeys(o.provider for o in template.offerings)) or [provider]


async def _check(
    deps: Deps, template: Template, user_id: str, count: int, provider: str, *, lock: bool = False
) -> dict[str, int]:
    """Refuse (429) what a quota has no room for; else how the request's machines are reserved over its
    candidate instances, spread in order, each up to its room (an instance without a quota has room for all).
    `lock`: the counts read are held until the transaction ends."""
    limits = deps.settings.provider.quotas.max_active
    names = _candidates(template, provider)
    capped = template.template_id if template.max_active is not None else None
    in_template, held = await deps.store.quotas.held(capped, [n for n in names if n in limits], lock=lock)
    shares = _plan(deps, template, count, names, in_template=in_template, held=held)
    await _check_user(deps, user_id, count)
    return shares


def _limit(deps: Deps, template: Template, subject: str) -> int:
    kind, name = subject.split(":", 1)
    return template.max_active or 0 if kind == "template" else deps.settings.provider.quotas.max_active[name]


def _plan(
    deps: Deps, template: Template, count: int, names: list[str], *, in_template: int, held: dict[str, int]
) -> dict[str, int]:
    """Refuse (429) what the template's or the candidates' quotas have no room for, given what they hold; else
    the request's machines spread over its candidates in order, each up to its room."""
    limits = deps.settings.provider.quotas.max_active
    if template.max_active is not None and in_template + count > template.max_active:
        _refuse(deps, "template", template.template_id, limit=template.max_active, held=in_template, count=count)
    shares: dict[str, int] = {}
    left = count
    for n in names:
        room = left if n not in limits else max(0, limits[n] - held[n])
        if min(room, left) > 0:
            shares[n] = min(room, left)
            left -= shares[n]
    if left > 0:
        in_use = sum(held.values())
        _refuse(deps, "provider", ", ".join(names), limit=sum(limits[n] for n in names), held=in_use, count=count)
    return shares


async def _check_user(deps: Deps, user_id: str, count: int) -> None:
    quotas = deps.settings.provider.quotas
    limit = quotas.machines_per_user
    if limit is None:
        return
    now = utcnow()
    window = timedelta(seconds=quotas.window_seconds)
    made = await deps.store.requested_since(user_id, now - window)
    used = sum(n for _, n in made)
    if used + count <= limit:
        return
    frees, left = now + window, used  # the time enough of the oldest requests have left the window
    for created, n in made:
        left -= n
        if left + count <= limit:
            frees = created + window
            break
    if frees.microsecond:  # shown to the second: rounded up, so the time shown is never too early
        frees = frees.replace(microsecond=0) + timedelta(seconds=1)
    wait = max(1, int((frees - now).total_seconds() + 0.999))
    details = {"frees_at": frees.isoformat(timespec="seconds"), "retry_after": wait}
    counted = f"requested in the last {quotas.window_seconds:g} s"
    _refuse(deps, "user", user_id, limit=limit, held=used, count=count, extra=details, counted=counted)


def _refuse(
    deps: Deps,
    quota: str,
    subject: str,
    *,
    limit: int,
    held: int,
    count: int,
    extra: dict[str, Any] | None = None,
    counted: str = "active or being launched",
) -> None:
    details: dict[str, Any] = {"quota": quota, "subject": subject, "limit": limit, "in_use": held, "asked": count}
    details |= extra or {"retry_after": deps.settings.provider.quotas.retry_seconds}
    when = (
        f"capacity frees at {details['frees_at']}"
        if "frees_at" in details
        else "capacity frees as machines are returned"
    )
    raise TooManyRequestsError(
        f"Quota of {quota} '{subject}' reached: {held} of {limit} machines {counted}, {count} more asked; {when}.",
        details=details,
    )
