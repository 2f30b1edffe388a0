"""Quotas, checked when a request is made (docs/providers.md): machines of a template at once
(`Template.max_active`), machines of a provider instance at once (`provider.quotas.max_active`), and machines a
user requests within a window (`provider.quotas.machines_per_user` per `window_seconds`).

A refusal is TooManyRequestsError (429, `Retry-After`) whose details say which quota, its limit, what is in
use and when capacity frees: the exact time for the window (its oldest requests leave it), for the limits at
once `provider.quotas.retry_seconds` (machines free when they are returned). Machines count while they are
active (pending, running, stopping, stopped). A candidate whose instance is at its quota is passed over like
one cooling down, and a launch asks an instance for no more than its room (`room`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import TooManyRequestsError
from pluginsdk.models import Template, utcnow

if TYPE_CHECKING:
    from ..deps import Deps

__all__ = ["check_quotas", "room"]


async def check_quotas(deps: Deps, template: Template, user_id: str, count: int, provider: str) -> None:
    """Refuse (429) a request of `count` machines that a quota does not leave room for."""
    if template.max_active is not None:
        held = (await deps.store.count_active_machines(template.template_id)).get(template.template_id, 0)
        if held + count > template.max_active:
            _refuse(deps, "template", template.template_id, limit=template.max_active, held=held, count=count)
    await _check_providers(deps, template, count, provider)
    await _check_user(deps, user_id, count)


async def room(deps: Deps, provider: str) -> int | None:
    """How many more machines `provider` may hold now (None: no quota)."""
    limit = deps.settings.provider.quotas.max_active.get(provider)
    if limit is None:
        return None
    return max(0, limit - (await deps.store.count_active_by_provider()).get(provider, 0))


async def _check_providers(deps: Deps, template: Template, count: int, provider: str) -> None:
    limits = deps.settings.provider.quotas.max_active
    names = list(dict.fromkeys(o.provider for o in template.offerings)) or [provider]
    if not limits or not all(n in limits for n in names):
        return  # a candidate without a quota always has room
    active = await deps.store.count_active_by_provider()
    free = sum(max(0, limits[n] - active.get(n, 0)) for n in names)
    if free < count:
        held = sum(active.get(n, 0) for n in names)
        _refuse(deps, "provider", ", ".join(names), limit=sum(limits[n] for n in names), held=held, count=count)


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
    counted: str = "active",
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
