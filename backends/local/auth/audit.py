"""The audit log: every change to constraints, roles, user roles, API keys and managed users, recorded centrally.

One hook (`around_command`, installed on the engine by `start_auth`) wraps every auth command: it reads
the target before, runs the handler, reads it after, and appends one record (who, when, what,
before/after with secrets removed, the policy revision after the change). A policy write's result
gets that revision too (`revision`), so a caller can ask a later check for `at_least_revision`.
Records are append-only: no operation updates or deletes them. Ids sort by time (nanoseconds, then
random), so paging is by id and concurrent writers never collide (no shared counter).

Decisions asked through the decision point may be logged too: `app.audit.decisionSampleRate`
(0 = never, the default; 1 = every decision).
"""

from __future__ import annotations

import json
import math
import random
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pluginsdk.operations import Operation, OperationSpec
from pluginsdk.principal import Principal

from .crypto import now, ts

if TYPE_CHECKING:
    from ..engine import Engine
    from .store import AuthStore

__all__ = ["AUDITED", "around_command", "decision_sample_rate", "log_decision", "page_records", "scrub"]

AUDITED: dict[str, str] = {
    "constraints": "constraint",
    "roles": "role",
    "userRoles": "userRole",
    "apiKeys": "apiKey",
    "userApiKeys": "apiKey",
    "users": "managedUser",
}
"""Operation category -> the audited target type."""

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


_ID_FIELDS: dict[str, tuple[str, ...]] = {
    "constraint": ("constraint_id", "constraint_ids"),
    "role": ("role_name", "role_id"),
    "userRole": ("user_id",),
    "apiKey": ("api_key_id",),
    "managedUser": ("user_id",),
}


def _target_id(target_type: str, op: Operation, result: Any = None) -> str:
    """The id of what the command changes (ids, comma-separated, of several): from its input, else (a create)
    from its result."""
    for source in (op, result):
        for name in _ID_FIELDS[target_type]:
            value = getattr(source, name, None)
            if isinstance(value, str) and value:
                return value[:_MAX_ID]
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):  # several: a,b
                return ",".join(value)[:_MAX_ID]
    return ""


async def _read(store: AuthStore, target_type: str, op: Operation, target_id: str) -> Any:
    """The target's state (secrets removed), or None when it does not exist."""
    if not target_id:
        return None
    if target_type == "constraint":
        ids = target_id.split(",") if "," in target_id else [target_id]
        found = {}
        for cid in ids:
            row = await store.get_constraint(cid)
            if row is not None:
                found[cid] = json.loads(row["data"])
        if "," in target_id:
            return found or None
        return found.get(target_id)
    if target_type == "role":
        row = await store.get_role(target_id)
    elif target_type == "userRole":
        return sorted(await store.roles_of(target_id)) or None
    elif target_type == "apiKey":
        row = await store.get_api_key(target_id)
    else:
        row = await store.get_user(target_id)
    return scrub(dict(row)) if row is not None else None


def _import_ids(op: Operation) -> str:
    ids = [str(c.get("constraintId") or c.get("constraint_id") or "") for c in getattr(op, "constraints", [])]
    return ",".join(i for i in ids if i)[:_MAX_ID]


async def around_command(
    engine: Engine,
    spec: OperationSpec,
    op: Operation,
    principal: Principal,
    handler: Callable[[Engine, Any, Principal], Awaitable[Any]],
) -> Any:
    """Run an auth command and record it (nothing is recorded when it fails: nothing changed)."""
    target_type = AUDITED.get(spec.category or "")
    if target_type is None or getattr(op, "dry_run", False):
        return await handler(engine, op, principal)
    from .handlers._common import service

    store = service(engine).store
    target = _import_ids(op) if spec.name == "import_constraints_template" else _target_id(target_type, op)
    before = await _read(store, target_type, op, target)
    result = await handler(engine, op, principal)
    if not target:
        target = _target_id(target_type, op, result)
        if not target and spec.name == "import_constraints_template":
            target = ",".join(getattr(result, "constraint_ids", []))[:_MAX_ID]
    async with store.transaction():
        after = await _read(store, target_type, op, target)
        revision = await store.policy_version()
        await store.db.execute(
            "INSERT INTO auth_audit (record_id, at, actor, action, target_type, target_id, before_data, after_data,"
            " revision) VALUES (:id, :at, :actor, :action, :tt, :tid, :before, :after, :rev)",
            {
                "id": _new_id(),
                "at": ts(now()),
                "actor": principal.user_id,
                "action": spec.name,
                "tt": target_type,
                "tid": target,
                "before": None if before is None else json.dumps(before, default=str),
                "after": None if after is None else json.dumps(after, default=str),
                "rev": revision,
            },
        )
    if target_type in ("constraint", "role", "userRole") and hasattr(result, "revision"):
        result.revision = revision
    return result


def _new_id() -> str:
    return f"{time.time_ns():020d}-{secrets.token_hex(4)}"


_RATES: weakref.WeakKeyDictionary[Engine, float] = weakref.WeakKeyDictionary()


def decision_sample_rate(engine: Engine) -> float:
    """`app.audit.decisionSampleRate` clamped to 0..1 (0 when unusable); read once per engine, asked per decision."""
    rate = _RATES.get(engine)
    if rate is None:
        raw = (engine.settings.app.get("audit") or {}).get("decisionSampleRate", 0)
        try:
            rate = float(raw)
        except (TypeError, ValueError):
            rate = 0.0
        rate = _RATES[engine] = min(max(rate, 0.0), 1.0) if math.isfinite(rate) else 0.0
    return rate


async def log_decision(
    engine: Engine, store: AuthStore, actor: str, about: Mapping[str, Any], *, allowed: bool, revision: int
) -> None:
    """Record one decision asked through the decision point, if sampled."""
    rate = decision_sample_rate(engine)
    if rate <= 0 or (rate < 1 and random.random() >= rate):
        return
    await store.db.execute(
        "INSERT INTO auth_audit (record_id, at, actor, action, target_type, target_id, before_data, after_data,"
        " revision) VALUES (:id, :at, :actor, 'decision', :tt, :tid, NULL, :after, :rev)",
        {
            "id": _new_id(),
            "at": ts(now()),
            "actor": actor,
            "tt": str(about.get("object_type", "")),
            "tid": str(about.get("subject", ""))[:_MAX_ID],
            "after": json.dumps({**about, "allowed": allowed}, default=str),
            "rev": revision,
        },
    )


async def page_records(
    store: AuthStore, filters: Mapping[str, Any], after: str | None, limit: int
) -> list[dict[str, Any]]:
    """Records oldest first, after the id `after`, matching the equality/time filters."""
    where = []
    params: dict[str, Any] = {"limit": limit}
    for column in ("actor", "action", "target_type", "target_id"):
        value = filters.get(column)
        if value is not None:
            where.append(f"{column} = :{column}")
            params[column] = value
    if filters.get("since") is not None:
        where.append("at >= :since")
        params["since"] = filters["since"]
    if filters.get("until") is not None:
        where.append("at < :until")
        params["until"] = filters["until"]
    if filters.get("min_revision") is not None:
        where.append("revision >= :min_revision")
        params["min_revision"] = filters["min_revision"]
    if after is not None:
        where.append("record_id > :after")
        params["after"] = after
    sql = "SELECT * FROM auth_audit" + (" WHERE " + " AND ".join(where) if where else "")
    rows = await store.db.fetchall(sql + " ORDER BY record_id LIMIT :limit", params)
    return [dict(r) for r in rows]
