"""The audit log: every command an operation declares audited (`Policy.audit` in the catalog), recorded centrally.

That is every change to constraints, roles, user roles, API keys, managed users and templates, and every
request, cancellation, return, readiness signal and clean-up, from whichever interface called it. Changes a
signed-in user makes to their own account (MFA set-up, verification and disabling, password changes) are
recorded by their handlers (`user_change`), and sign-in locks by `throttle.py` (`AuthStore.append_audit`);
those commands say so in `Policy.unaudited`.

The engine runs every command its operation declares audited through `run_audited` (`Engine.execute`, which
binds it to the auth service it started): it runs the handler and appends one record (who, when, what, the
target's id from the input or else the result). With `Audit.snapshot` it also reads the target before and
after (secrets removed); without (the hot paths: a launch, a return, a readiness signal) the record's `after`
is the call's input and the record costs one insert. A record carries the policy revision: a policy write's own (each
write its own number), else the one the call was authorized on. A policy write's result gets that revision
too (`revision`), so a caller can ask a later check for `at_least_revision`.
Records are append-only: no operation updates or deletes them. Ids sort by time (nanoseconds, then
random), so paging is by id and concurrent writers never collide (no shared counter).

Decisions asked through the decision point may be logged too: `app.audit.decisionSampleRate`
(0 = never, the default; 1 = every decision).
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pluginsdk.operations import Operation

if TYPE_CHECKING:
    from ..call import Call
    from .service import AuthService
    from .store import AuthStore

__all__ = [
    "decision_sample_rate",
    "log_decision",
    "operator",
    "page_records",
    "run_audited",
    "scrub",
    "user_change",
]

_SECRET_WORDS = ("hash", "secret", "password", "token", "totp")
_MAX_ID = 1024


def scrub(value: Any) -> Any:
    """A stored row or object without its secrets (hashes, TOTP seeds, passwords, tokens, keys)."""
    if isinstance(value, Mapping):
        return {
            str(k): scrub(v)
            for k, v in value.items()
            if not any(w in str(k).lower() for w in _SECRET_WORDS) and str(k) not in ("apiKey", "api_key")
        }
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def _target_id(ids: tuple[str, ...], op: Operation, result: Any = None) -> str:
    """The id of what the command changes (ids, comma-separated, of several): from its input, else (a create)
    from its result."""
    for source in (op, result):
        for name in ids:
            value = getattr(source, name, None)
            if isinstance(value, str) and value:
                return value[:_MAX_ID]
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):  # several: a,b
                return ",".join(value)[:_MAX_ID]
    return ""


async def _read(svc: AuthService, target_type: str, target_id: str) -> Any:
    """The target's state (secrets removed), or None when it does not exist."""
    store = svc.store
    if not target_id:
        return None
    if target_type == "constraint":
        row = await store.get_constraint(target_id)
        return None if row is None else json.loads(row["data"])
    if target_type == "template":
        template = await svc.objects.template(target_id)
        return None if template is None else scrub(template.model_dump(mode="json", exclude_none=True))
    if target_type == "role":
        row = await store.get_role(target_id)
    elif target_type == "userRole":
        return sorted(await store.roles_of(target_id)) or None
    elif target_type == "apiKey":
        row = await store.get_api_key(target_id)
    else:
        row = await store.get_user(target_id)
    return scrub(dict(row)) if row is not None else None


async def _constraints(store: AuthStore, ids: list[str]) -> dict[str, Any]:
    """The stored constraints among `ids`, by id."""
    found = {}
    for cid in ids:
        row = await store.get_constraint(cid)
        if row is not None:
            found[cid] = json.loads(row["data"])
    return found


def _import_ids(op: Operation) -> list[str]:
    """The ids a template import names (one it does not name gets a generated id, known from its result)."""
    ids = (str(c.get("constraintId") or c.get("constraint_id") or "") for c in getattr(op, "constraints", []))
    return [i[:_MAX_ID] for i in ids if i]


def _dry_run(call: Call) -> bool:
    """The call stores nothing: a dry run, or a create's validate-only flag (`Rest.dry_run`)."""
    flag = call.spec.rest.dry_run if call.spec.rest is not None else None
    return bool(getattr(call.op, "dry_run", False) or (flag and getattr(call.op, flag, False)))


async def run_audited(
    svc: AuthService, given: object, call: Call, handler: Callable[[Any, Any, Call], Awaitable[Any]]
) -> Any:
    """Run a command's `handler(given, op, call)` and record it as its declaration says (`Policy.audit`) in
    `svc`'s store (nothing is recorded when it fails, or when its result says it wrote nothing: nothing
    changed). A command that writes several constraints (a template import, a grant) records each as its own
    record, found by that constraint's id."""
    spec, op, principal = call.spec, call.op, call.principal
    audit = spec.policy.audit
    if audit is None or _dry_run(call):
        return await handler(given, op, call)
    store = svc.store
    if not audit.snapshot:  # one insert, no reads: the launch path
        result = await handler(given, op, call)
        await store.append_audit(
            actor=principal.user_id,
            action=spec.name,
            target=(audit.target, _target_id(audit.ids, op, result)),
            after=scrub(op.model_dump(mode="json", exclude_none=True)),
            revision=call.revision or call.policy_version,
        )
        return result
    if audit.each_constraint:
        before_all = await _constraints(store, _import_ids(op))
        result = await handler(given, op, call)
        ids = [str(i)[:_MAX_ID] for i in getattr(result, "constraint_ids", [])]
        if getattr(result, "created", True) is False:  # every constraint already as asked: nothing to record
            ids = []
        async with store.transaction():
            after_all = await _constraints(store, ids)
            revision = call.revision or await store.policy_version()  # the write's own, else the current one
            for i in ids:
                await store.append_audit(
                    actor=principal.user_id,
                    action=spec.name,
                    target=(audit.target, i),
                    before=scrub(before_all.get(i)),
                    after=scrub(after_all.get(i)),
                    revision=revision,
                )
    else:
        target = _target_id(audit.ids, op)
        before = await _read(svc, audit.target, target)
        result = await handler(given, op, call)
        target = target or _target_id(audit.ids, op, result)
        async with store.transaction():
            after = await _read(svc, audit.target, target)
            revision = call.revision or await store.policy_version()  # the write's own, else the current one
            await store.append_audit(
                actor=principal.user_id,
                action=spec.name,
                target=(audit.target, target),
                before=scrub(before),
                after=scrub(after),
                revision=revision,
            )
    if spec.policy.writes_policy and hasattr(result, "revision"):
        result.revision = revision
    return result


async def user_change(store: AuthStore, actor: str, action: str, user_id: str, before: Any) -> None:
    """Record a change a session made to its own managed user (MFA, password): the user row before (as read
    by the handler) and after, without secrets; in the caller's transaction."""
    after = await store.get_user(user_id)
    await store.append_audit(
        actor=actor,
        action=action,
        target=("managedUser", user_id),
        before=None if before is None else scrub(dict(before)),
        after=None if after is None else scrub(dict(after)),
    )


def operator() -> str:
    """The actor of an operator command: the OS login that ran it."""
    import getpass

    try:
        login = getpass.getuser()
    except (OSError, KeyError):  # no login name (a container's anonymous uid)
        import os

        login = f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return f"operator:{login}"


def decision_sample_rate(svc: AuthService) -> float:
    """`app.audit.decisionSampleRate` (0..1, checked when the settings were loaded)."""
    return svc.config.decision_sample_rate


async def log_decision(svc: AuthService, actor: str, about: Mapping[str, Any], *, allowed: bool, revision: int) -> None:
    """Record one decision asked through the decision point, if sampled."""
    rate = decision_sample_rate(svc)
    if rate <= 0 or (rate < 1 and random.random() >= rate):
        return
    target = (str(about.get("object_type", "")), str(about.get("subject", "")))
    await svc.store.append_audit(
        actor=actor, action="decision", target=target, after={**about, "allowed": allowed}, revision=revision
    )


async def page_records(
    store: AuthStore, filters: Mapping[str, Any], after: str | None, limit: int
) -> list[dict[str, Any]]:
    """Records oldest first, after the id `after`, matching the equality/time filters."""
    return [dict(r) for r in await store.page_audit(filters, after, limit)]
