"""Bootstrap failures: machines that run at the provider but never say they are ready.

A template may require a readiness signal (`configuration.boot`, docs/providers.md): its machines count as
started only once they report ready — the provider knows it (`ProvisionedMachine.ready`) or the machine calls
`mark_machine_ready`. A machine not ready `timeout_seconds` after its launch is terminated and replaced once
(the replacement is an attempt of the request, `replaces` naming the machine, launched like a fallback:
`provisioning/offerings.py`); a replacement that is not ready in time either is a bootstrap failure of the template, and
`max_failures` of those in a row protect the template (no new launches) until an operator clears it
(`store/boot.py`). The reconciler runs this on every pass, so a process killed midway loses nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from pluginsdk.errors import NotFoundError, ProviderError, StateConflictError, ValidationError
from pluginsdk.models import Machine, MachineStatus, Request, Template, utcnow

from ..providers.base import LaunchResult, ProvisionedMachine, capacity_code
from . import offerings
from .settling import fold_states

if TYPE_CHECKING:
    from ..deps import Deps

__all__ = ["PROTECTION_EXPECTED", "BootRule", "check_protection", "enforce", "resume", "rule_of", "unready"]

log = logging.getLogger("pluginsdk.readiness")

TIMEOUT = 600.0
"""Default `configuration.boot.timeout_seconds`."""
MAX_FAILURES = 3
"""Default `configuration.boot.max_failures`."""
PROTECTION_EXPECTED = "a template not protected"
"""`details.expected` of the refusal of a protected template's launch (the CLI's hint reads it)."""
_REQUEST_KEYS = ("price_type", "additional_data", "machine_names")
"""Provider data a request is created with (the rest of a plain launch's is its driver's)."""

Terminate = Callable[["Deps", Request, list[Machine]], Awaitable[None]]


class BootRule(NamedTuple):
    """A template's readiness requirement (a NamedTuple: a dataclass would compile its methods whenever a request
    query imports this module)."""

    timeout: float = TIMEOUT
    max_failures: int = MAX_FAILURES


def rule_of(template: Template | None) -> BootRule | None:
    """The template's rule, or None when it requires no readiness signal. Raises ValueError on bad values."""
    if template is None:
        return None
    boot = template.configuration.get("boot")
    if boot is None:
        return None
    if not isinstance(boot, dict):
        raise ValueError("configuration.boot must be an object")
    unknown = set(boot) - {"requires_ready", "timeout_seconds", "max_failures"}
    if unknown:
        raise ValueError(f"configuration.boot has unknown keys: {', '.join(sorted(unknown))}")
    required = boot.get("requires_ready", True)
    timeout = boot.get("timeout_seconds", TIMEOUT)
    limit = boot.get("max_failures", MAX_FAILURES)
    if not isinstance(required, bool):
        raise ValueError("configuration.boot.requires_ready must be true or false")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 86400:
        raise ValueError("configuration.boot.timeout_seconds must be a number of seconds above 0, at most 86400")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValueError("configuration.boot.max_failures must be a whole number from 1 to 1000")
    return BootRule(float(timeout), limit) if required else None


async def check_protection(deps: Deps, template: Template) -> None:
    """Refuse a launch of a protected template (409, naming why and how to clear it)."""
    reason = await deps.boot.protection(template.template_id)
    if reason is not None:
        clear = "update the template" if template.source == "store" else "change its file and refresh the templates"
        raise StateConflictError(
            f"{reason}; no new launches until an operator clears it: {clear}.",
            details={
                "field": "template_id",
                "value": template.template_id,
                "expected": PROTECTION_EXPECTED,
                "source": template.source,
            },
        )


async def unready(
    deps: Deps, template_id: str, machines: Iterable[Machine], seen: Iterable[ProvisionedMachine]
) -> set[str]:
    """Running machines that have not reported ready; readiness the provider reports is recorded first."""
    for pm in seen:
        if pm.ready and await deps.boot.mark_ready(pm.machine_id):
            await deps.boot.succeeded(template_id)
    running = [m.machine_id for m in machines if m.status is MachineStatus.RUNNING and not m.return_request_id]
    return set(running) - await deps.boot.ready(running)


async def enforce(
    deps: Deps,
    request: Request,
    template: Template,
    rule: BootRule,
    *,
    machines: dict[str, Machine],
    waiting: set[str],
    terminate: Terminate,
) -> None:
    """Terminate the machines not ready within the rule's timeout; replace each once, or count the failure of a
    replacement (protecting the template at its limit). Replacements left unlaunched by a dead process go out."""
    now = utcnow()
    late = [machines[mid] for mid in sorted(waiting) if (now - machines[mid].created_at).total_seconds() > rule.timeout]
    for m in late:
        request = await _fail(deps, request, template, rule, m=m, terminate=terminate)
    await resume(deps, request, template)


async def resume(deps: Deps, request: Request, template: Template) -> Request:
    """Launch the replacements recorded and not launched yet (a process died between the two); the request."""
    while attempt := next(
        (a for a in offerings.attempts_of(request) if a.get("replaces") and a["outcome"] == "launching"), None
    ):
        request = await _launch_replacement(deps, request, template, attempt)
    return request


async def _fail(
    deps: Deps, request: Request, template: Template, rule: BootRule, *, m: Machine, terminate: Terminate
) -> Request:
    """One machine past its boot timeout: its reason recorded, its replacement (or the failure) recorded, then
    it is terminated."""
    reason = f"Bootstrap failure: not ready within {rule.timeout:g} s of its launch"
    replacement = any(a.get("replaces") for a in offerings.attempts_of(request) if m.machine_id in _made(a))
    stored = await deps.store.get_machines([m.machine_id])
    first_time = (stored.get(m.machine_id) or m).status_reason != reason
    if first_time:
        await deps.store.upsert_machines([m.model_copy(update={"status_reason": reason, "updated_at": utcnow()})])
    if replacement:
        if first_time:
            protected = await deps.boot.failed(template.template_id, rule.max_failures, reason)
            if protected:
                log.warning("%s", protected)
    else:
        request = await _plan_replacement(deps, request, m)
    await terminate(deps, request, [m])
    return request


def _made(attempt: dict[str, Any]) -> list[str]:
    return list(attempt.get("machines") or [])


def _as_attempts(request: Request) -> dict[str, Any]:
    """A plain request's provider data as one attempt of it (its launch), so a replacement can be another."""
    data = dict(request.provider_data)
    if offerings.has_offerings(request):
        return data
    first = {
        "offering": 0,
        "provider": request.provider_name,
        "key": "",
        "n": 0,
        "launch_id": request.request_id,
        "asked": request.count,
        "served": request.count,
        "outcome": "served",
        "probe": False,
        "machines": list(request.machine_ids),
        "data": {k: v for k, v in data.items() if k not in _REQUEST_KEYS},
    }
    return {k: v for k, v in data.items() if k in _REQUEST_KEYS} | {"attempts": [first], "skipped": []}


async def _plan_replacement(deps: Deps, request: Request, m: Machine) -> Request:
    """The request with an attempt recorded to replace `m` (once: an existing one is kept)."""
    async with deps.store.transaction():
        current = await deps.store.get_request(request.request_id, for_update=True) or request
        data = _as_attempts(current)
        attempts = [dict(a) for a in data["attempts"]]
        if any(a.get("replaces") == m.machine_id for a in attempts):
            return current
        origin = next((a for a in attempts if m.machine_id in _made(a)), None) or next(
            (a for a in attempts if a["provider"] == m.provider_name), attempts[0]
        )
        n = len(attempts)
        attempts.append(
            {
                "offering": origin["offering"],
                "provider": origin["provider"],
                "key": origin.get("key", ""),
                "n": n,
                "launch_id": f"{current.request_id}-{n}",
                "asked": 1,
                "outcome": "launching",
                "probe": False,
                "replaces": m.machine_id,
            }
        )
        current = current.model_copy(update={"provider_data": data | {"attempts": attempts}, "updated_at": utcnow()})
        await deps.store.update_request(current)
    return current


async def _launch_replacement(deps: Deps, request: Request, template: Template, attempt: dict[str, Any]) -> Request:
    """Launch one recorded replacement (idempotent under its launch id) and record what it started. One refused
    for capacity is a capacity outcome: its candidate cools down and the next candidate's attempt is recorded
    (`offerings.refused_replacement`), for `resume` to launch."""
    launched, update = await _try_replacement(deps, request, template, attempt)
    following = None
    if update["outcome"] == "capacity":
        attempt = attempt | update
        following = await offerings.refused_replacement(deps, request, template, attempt, update["reason"])
        update |= {k: attempt[k] for k in ("cooldown_until",) if k in attempt}
    async with deps.store.transaction():
        current = await deps.store.get_request(request.request_id, for_update=True) or request
        attempts = [a | update if a["launch_id"] == attempt["launch_id"] else a for a in offerings.attempts_of(current)]
        if following is not None and following["launch_id"] not in {a["launch_id"] for a in attempts}:
            attempts.append(following)
        current = current.model_copy(
            update={"provider_data": {**current.provider_data, "attempts": attempts}, "updated_at": utcnow()}
        )
        if launched is not None:
            providers = {pm.machine_id: attempt["provider"] for pm in launched.machines}
            stored = await fold_states(deps, current, launched.machines, providers)
            current = current.model_copy(update={"machine_ids": list(stored)})
        await deps.store.update_request(current)
    return current


async def _try_replacement(
    deps: Deps, request: Request, template: Template, attempt: dict[str, Any]
) -> tuple[LaunchResult | None, dict[str, Any]]:
    """The replacement's launch, and its attempt's outcome: `served`, `capacity` (refused, or nothing started,
    for capacity) or `error`."""
    try:
        driver = await deps.providers.get(attempt["provider"])
        launched = await driver.launch(offerings.view(request, attempt), offerings.applied(template, attempt), 1)
    except (ProviderError, NotFoundError, ValidationError) as exc:
        code = exc.details.get("provider_code") if isinstance(exc, ProviderError) else None
        return None, {"outcome": "capacity" if capacity_code(code) else "error", "served": 0, "reason": exc.message}
    short = _capacity_short(launched)
    update: dict[str, Any] = {
        "outcome": "capacity" if short else "served" if launched.machines else "error",
        "served": 0 if short else len(launched.machines),
        "machines": [pm.machine_id for pm in launched.machines],
        "data": launched.provider_data,
    }
    return launched, update | ({"reason": short} if short else {})


def _capacity_short(launched: LaunchResult) -> str | None:
    """Why a replacement's launch started nothing for capacity (the provider's reason), or None."""
    if int(launched.provider_data.get("unfilled") or 0):
        return str(launched.provider_data.get("unfilled_reason") or "InsufficientInstanceCapacity")
    reasons = [pm.reason for pm in launched.machines if pm.status is MachineStatus.FAILED and capacity_code(pm.reason)]
    return reasons[0] if reasons and len(reasons) == len(launched.machines) else None
