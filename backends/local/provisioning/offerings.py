"""Requests of a template with candidates (`Template.offerings`): fallback on capacity and top-ups.

A launch goes to the candidates in turn (weight, then listed order). A candidate the capacity memory is
cooling down is skipped (`store/capacity.py`); one that refuses for capacity (`providers.base.CAPACITY_CODES`)
is cooled down and the next is asked; one that starts only some of the machines is topped up from the next.
Each call to a candidate is an *attempt*, kept in the request's `provider_data["attempts"]` — recorded
`launching` before the provider is called, so a process that dies between a failed launch and its fallback
loses nothing: whoever takes the request's claim over resumes here (an attempt is launched again under the
same launch id, which providers treat idempotently). Each attempt has its own launch id (the request id for
the first, `<request id>-<n>` after), so every driver finds, returns and cleans up what its attempt made.
`provider_data["skipped"]` says why candidates were passed over.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import NotFoundError, ProviderError, ValidationError
from pluginsdk.models import Machine, MachineStatus, Offering, Request, RequestStatus, Template, utcnow

from ..providers.base import LaunchResult, ProvisionedMachine, capacity_code
from . import quotas
from .settling import fold_states, settle_status

if TYPE_CHECKING:
    from ..deps import Deps

__all__ = [
    "applied",
    "attempts_of",
    "cleanup_attempts",
    "has_offerings",
    "launch_offerings",
    "observe",
    "ordered",
    "refused_replacement",
    "terminate_by_attempt",
    "view",
]

log = logging.getLogger("pluginsdk.offerings")

_OWN = ("attempts", "skipped", "unfilled", "unfilled_reason")
"""Keys of the request's provider data that are the engine's, not a driver's."""


def has_offerings(request: Request) -> bool:
    """Whether the request was launched through candidates (its attempts are recorded)."""
    return "attempts" in request.provider_data


def ordered(template: Template) -> list[tuple[int, Offering]]:
    """The candidates in the order they are tried: higher weight first, equal weights as listed."""
    return sorted(enumerate(template.offerings), key=lambda pair: -pair[1].weight)


def attempts_of(request: Request) -> list[dict[str, Any]]:
    return [dict(a) for a in request.provider_data.get("attempts") or []]


def view(request: Request, attempt: dict[str, Any]) -> Request:
    """The request as the driver of one attempt sees it: its launch id, its provider data."""
    data = {k: v for k, v in request.provider_data.items() if k not in _OWN and k != "machine_names"}
    data |= attempt.get("data") or {}
    if attempt.get("names"):
        data["machine_names"] = attempt["names"]
    return request.model_copy(
        update={"request_id": attempt["launch_id"], "provider_name": attempt["provider"], "provider_data": data}
    )


def _served(attempts: list[dict[str, Any]]) -> int:
    return sum(int(a.get("served") or 0) for a in attempts if a["outcome"] != "launching")


async def launch_offerings(deps: Deps, request: Request, template: Template) -> Request:
    """Launch a recorded request across its template's candidates; returns the stored request.

    Raises ProviderError (the request recorded `failed`) when no candidate started a machine."""
    run = _Fallback(deps, request, template)
    needed = request.count - _served(run.attempts)
    done = {a["offering"] for a in run.attempts if a["outcome"] != "launching"}
    for index, offering in ordered(template):
        if needed <= 0:
            break
        if index in done:
            continue
        attempt = next((a for a in run.attempts if a["offering"] == index), None)
        if attempt is None:
            attempt = await run.admitted(index, offering, needed)
            if attempt is None:
                continue
            run.attempts.append(attempt)
            await run.save()  # recorded before the provider is called
        needed -= await run.attempt(offering, attempt)
        if needed > 0:  # another candidate is asked next; the last attempt is written with the settled request
            await run.save()
    return await _settle(deps, run.merged(), run.seen, max(needed, 0))


class _Fallback:
    """One launch across candidates: the request as last saved, its attempts and skips, what was launched."""

    def __init__(self, deps: Deps, request: Request, template: Template) -> None:
        self.deps = deps
        self.request = request
        self.template = template
        self.attempts = attempts_of(request)
        self.skipped: list[dict[str, Any]] = list(request.provider_data.get("skipped") or [])
        self.seen: dict[str, tuple[str, ProvisionedMachine]] = {}

    async def admitted(self, index: int, offering: Offering, needed: int) -> dict[str, Any] | None:
        """A new attempt on the candidate, or None when the capacity memory says skip it (kept in `skipped`)."""
        key = offering.key(self.template)
        free = await quotas.take(self.deps, self.request, offering.provider, needed)
        if free == 0:
            reason = f"at its quota of {self.deps.settings.provider.quotas.max_active[offering.provider]} machines"
            self.skipped.append({"offering": index, "provider": offering.provider, "key": key, "reason": reason})
            return None
        admission = await self.deps.capacity.admit(key)
        if admission.verdict == "skip":
            until = _iso_up(admission.until or 0)
            why = "a probe launch is in flight" if admission.state == "probing" else "cooling down"
            self.skipped.append(
                {"offering": index, "provider": offering.provider, "key": key, "reason": why, "until": until}
            )
            self.deps.capacity_counters["skipped"] += 1
            return None
        number = len(self.attempts)
        rid = self.request.request_id
        return {
            "offering": index,
            "provider": offering.provider,
            "key": key,
            "n": number,
            "launch_id": rid if number == 0 else f"{rid}-{number}",
            "asked": needed if free is None else min(needed, free),
            "outcome": "launching",
            "probe": admission.verdict == "probe",
            "remembered": admission.state != "closed",
            "names": _names_left(self.request, number),
        }

    async def attempt(self, offering: Offering, attempt: dict[str, Any]) -> int:
        """One launch on a candidate; updates `attempt`, `seen` and the capacity memory. Returns how many
        machines it started (0 when it failed)."""
        applied = offering.applied(self.template)
        try:
            driver = await self.deps.providers.for_template(applied, offering.provider)
            if attempt["n"] > 0:
                self.deps.capacity_counters["fallbacks"] += 1
            launched = await driver.launch(view(self.request, attempt), applied, int(attempt["asked"]))
        except (ProviderError, NotFoundError, ValidationError) as exc:
            code = exc.details.get("provider_code") if isinstance(exc, ProviderError) else None
            return await _refused(self.deps, attempt, exc.message, capacity=capacity_code(code))
        return await self.launched(offering, attempt, launched)

    async def launched(self, offering: Offering, attempt: dict[str, Any], launched: LaunchResult) -> int:
        """Record what a launch started; machines it could not start for capacity cool the candidate down."""
        asked = int(attempt["asked"])
        short = _short_of(launched, asked)
        for m in launched.machines:
            self.seen[m.machine_id] = (offering.provider, m)
        attempt.update(
            outcome="served" if not short else ("partial" if short < asked else "capacity"),
            served=asked - short,
            machines=[m.machine_id for m in launched.machines],
            named=[m.name for m in launched.machines if m.name and m.status is not MachineStatus.FAILED],
            data={k: v for k, v in launched.provider_data.items() if k not in _OWN},
        )
        if short:
            attempt["reason"] = str(launched.provider_data.get("unfilled_reason") or "InsufficientInstanceCapacity")
            await _cool(self.deps, attempt, attempt["reason"])
        elif attempt["probe"] or attempt.get("remembered"):  # a candidate with no failure on record stays closed
            await self.deps.capacity.succeeded(attempt["key"])
        return asked - short

    def merged(self) -> Request:
        """The request with its attempts and skips as they are now."""
        data = {**self.request.provider_data, "attempts": self.attempts, "skipped": self.skipped}
        return self.request.model_copy(update={"provider_data": data})

    async def save(self) -> None:
        self.request = self.merged()
        await self.deps.store.update_request(self.request)


async def refused_replacement(
    deps: Deps, request: Request, template: Template, attempt: dict[str, Any], reason: str
) -> dict[str, Any] | None:
    """A bootstrap replacement (`attempt`, readiness.py) refused for capacity: its candidate is cooled down and
    the attempt asking the next candidate for the same replacement is returned (None when none is left). A
    plain template's launch has no candidate key to cool and no other candidate."""
    if attempt.get("key"):
        await _cool(deps, attempt, reason)
    if not template.offerings:
        return None
    run = _Fallback(deps, request, template)
    asked = {a["offering"] for a in run.attempts if a.get("replaces") == attempt["replaces"]}
    for index, offering in ordered(template):
        if index not in asked and (following := await run.admitted(index, offering, 1)) is not None:
            del following["names"]
            return following | {"asked": 1, "replaces": attempt["replaces"]}
    return None


def _short_of(launched: LaunchResult, asked: int) -> int:
    """How many of the machines asked for a launch could not start for capacity."""
    short = int(launched.provider_data.get("unfilled") or 0)
    short += sum(1 for m in launched.machines if m.status is MachineStatus.FAILED and capacity_code(m.reason))
    return min(short, asked)


def _names_left(request: Request, number: int) -> list[str]:
    """The machine names (a scheduler's node names) a new attempt may use: those no earlier attempt's machine
    took."""
    names = list(request.provider_data.get("machine_names") or [])
    if not names or number == 0:
        return names
    taken = {n for a in attempts_of(request) for n in a.get("named") or []}
    return [n for n in names if n not in taken]


async def _refused(deps: Deps, attempt: dict[str, Any], message: str, *, capacity: bool) -> int:
    attempt.update(outcome="capacity" if capacity else "error", served=0, reason=message)
    if capacity:
        await _cool(deps, attempt, message)
    return 0


async def _cool(deps: Deps, attempt: dict[str, Any], reason: str) -> None:
    until = await deps.capacity.failed(attempt["key"], attempt["provider"], reason)
    attempt["cooldown_until"] = _iso_up(until)
    deps.capacity_counters["capacity_failures"] += 1


def _iso_up(timestamp: float) -> str:
    """A time as ISO seconds, rounded up: a client told to retry then is never early."""
    return datetime.fromtimestamp(math.ceil(timestamp), UTC).isoformat(timespec="seconds")


async def _settle(deps: Deps, request: Request, seen: dict[str, tuple[str, ProvisionedMachine]], short: int) -> Request:
    """The launched machines recorded (each with the provider instance that made it) and the first status."""
    attempts = attempts_of(request)
    async with deps.store.transaction():
        current = await deps.store.get_request(request.request_id, for_update=True) or request
        providers = {mid: provider for mid, (provider, _) in seen.items()}
        stored = await fold_states(deps, current, [pm for _, pm in seen.values()], providers)
        failed_short = sum(1 for m in stored.values() if m.status is MachineStatus.FAILED and _short(m))
        data = {**request.provider_data}
        unfilled = max(0, short - failed_short)
        if unfilled:
            data |= {"unfilled": unfilled, "unfilled_reason": _why(attempts, request)}
        current = current.model_copy(update={"provider_data": data, "machine_ids": list(stored)})
        status, message = settle_status(current, list(stored.values()), timed_out=False)
        served = _served(attempts)
        if not served:
            status, message = RequestStatus.FAILED, f"Provider error: {_why(attempts, request)}"
        elif not stored:
            status = RequestStatus.RUNNING
        now = utcnow()
        current = current.model_copy(
            update={
                "status": status,
                "message": message,
                "updated_at": now,
                "completed_at": now if status.terminal else None,
                "provider_name": _first_provider(attempts, current),
            }
        )
        await quotas.settled(deps, current, len(stored))
        await deps.store.update_request(current)
    if not _served(attempts):
        raise ProviderError(
            f"No candidate of template '{request.template_id}' could launch: {_why(attempts, request)}",
            details={"provider_code": "NoCapacity", "request_id": request.request_id, "retry_at": _retry_at(request)},
        )
    return current


def _short(m: Machine) -> bool:
    return capacity_code(m.status_reason)


def _first_provider(attempts: list[dict[str, Any]], request: Request) -> str:
    """The provider instance of the first attempt that served the request (its `provider_name`)."""
    return next((a["provider"] for a in attempts if a.get("served")), request.provider_name)


def _why(attempts: list[dict[str, Any]], request: Request) -> str:
    """Why candidates did not serve: each attempt's refusal and each skip, in order."""
    parts = [f"{a['provider']}: {a['reason']}" for a in attempts if a.get("reason")]
    parts += [
        f"{s['provider']}: {s['reason']}" + (f" until {s['until']}" if s.get("until") else "")
        for s in request.provider_data.get("skipped") or []
    ]
    return "; ".join(parts) or "no candidate"


def _retry_at(request: Request) -> str | None:
    """When the first skipped or failed candidate may be tried again (ISO time), if any."""
    times = [a["cooldown_until"] for a in attempts_of(request) if a.get("cooldown_until")]
    times += [s["until"] for s in request.provider_data.get("skipped") or [] if s.get("until")]
    return min(times) if times else None


async def observe(
    deps: Deps, request: Request, template: Template | None
) -> tuple[Request, list[ProvisionedMachine], dict[str, str]]:
    """What every attempt's provider reports for the request, and which provider instance reported each
    machine; a request whose launch never finished (still `pending`: its launcher died) is resumed first."""
    if request.status is RequestStatus.PENDING and template is not None and template.offerings:
        current = await deps.store.get_request(request.request_id) or request
        if current.status is RequestStatus.PENDING:
            log.warning("request %s: its launch did not finish (the launcher died); resuming it", request.request_id)
            try:
                request = await launch_offerings(deps, current, template)
            except ProviderError:  # recorded as the request's failure
                request = await deps.store.get_request(request.request_id) or current
    seen: list[ProvisionedMachine] = []
    providers: dict[str, str] = {}
    for attempt in attempts_of(request):
        if not attempt.get("served") and attempt["outcome"] != "launching":
            continue
        driver = await deps.providers.get(attempt["provider"])
        applied = _applied(template, attempt)
        for pm in await driver.describe(view(request, attempt), applied):
            seen.append(pm)
            providers[pm.machine_id] = attempt["provider"]
    return request, seen, providers


def applied(template: Template, attempt: dict[str, Any]) -> Template:
    """The template as one attempt's candidate launches it."""
    return _applied(template, attempt) or template


def _applied(template: Template | None, attempt: dict[str, Any]) -> Template | None:
    index = int(attempt["offering"])
    if template is None or index >= len(template.offerings):
        return template
    return template.offerings[index].applied(template)


async def terminate_by_attempt(deps: Deps, request: Request, machines: list[Machine]) -> dict[str, MachineStatus]:
    """Return machines of a request launched through candidates: each to the attempt (and driver) that made it."""
    states: dict[str, MachineStatus] = {}
    left = {m.machine_id: m for m in machines}
    for attempt in attempts_of(request):
        mine = [left.pop(mid) for mid in attempt.get("machines") or [] if mid in left]
        if mine:
            driver = await deps.providers.get(attempt["provider"])
            states |= await driver.terminate(view(request, attempt), mine)
    for provider in sorted({m.provider_name for m in left.values()}):  # adopted after the launch answered
        group = [m for m in left.values() if m.provider_name == provider]
        first = [a for a in attempts_of(request) if a["provider"] == provider]
        target = view(request, first[0]) if first else request
        states |= await (await deps.providers.get(provider)).terminate(target, group)
    return states


async def cleanup_attempts(deps: Deps, request: Request) -> None:
    """Let each attempt's provider drop what the finished request no longer needs."""
    for attempt in attempts_of(request):
        driver = await deps.providers.get(attempt["provider"])
        cleanup = getattr(driver, "cleanup", None)
        if cleanup is None:
            continue
        try:
            await cleanup(view(request, attempt))
        except Exception:
            log.exception("cleaning up after %s failed", attempt["launch_id"])
