"""Handler: `grant_access` — the object constraint and its route constraints, written together or not at all."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import AlreadyExistsError, ValidationError
from pluginsdk.models.auth import Constraint, validate_constraint
from pluginsdk.models.auth_results import AccessGranted
from pluginsdk.operations.constraints import RESERVED_ID
from pluginsdk.operations.grants import GrantAccessCommand

from ...registry import HandlerTable
from ..crypto import now, ts
from ..object_routes import object_routes, other_routes, route_pattern
from ..service import AuthService
from ._common import bump

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)


def _allow(role: str, methods: list[str]) -> list[dict[str, str]]:
    return [{"groupId": role, "permission": m, "permissionType": "allow"} for m in methods]


def _constraints(op: GrantAccessCommand) -> tuple[list[Constraint], list[str]]:
    """(the object constraint then one route constraint per method with routes, validated; `METHOD pattern`s)."""
    methods = sorted(set(op.methods))
    base = op.base_id
    if RESERVED_ID in op.constraint_ids:
        raise ValidationError(
            f"grant_id {base!r} names a route, not a constraint.",
            details={"field": "grant_id", "value": base, "expected": "another id"},
        )
    criteria_and = [c.model_dump() for c in op.criteria_and or []]
    criteria_or = [c.model_dump() for c in op.criteria_or or []]
    what = f"{', '.join(methods)} on {op.object_type} objects for role {op.role_name}"
    written = [
        {
            "constraintId": base,
            "name": f"grant: {what}"[:256],
            "description": f"objects of the grant {base}"[:256],
            "objectType": op.object_type,
            "criteriaAnd": criteria_and,
            "criteriaOr": criteria_or,
            "groupPermissions": _allow(op.role_name, methods),
        }
    ]
    opened: list[str] = []
    for method in methods:
        routes = object_routes(op.object_type, (method,))
        if not routes:
            continue
        patterns = list(dict.fromkeys(route_pattern(r, criteria_and) for r in routes))
        excluded = other_routes(patterns, (method,), routes)
        written.append(
            {
                "constraintId": f"{base}-{method.lower()}",
                "name": f"grant: {method} routes of {op.object_type} objects for role {op.role_name}"[:256],
                "description": f"routes of the grant {base}"[:256],
                "objectType": "api",
                "criteriaAnd": (
                    [{"field": "route__path", "operator": "is_not_one_of", "value": ",".join(excluded)}]
                    if excluded
                    else []
                ),
                "criteriaOr": [{"field": "route__path", "operator": "equals", "value": p} for p in patterns],
                "groupPermissions": _allow(op.role_name, [method]),
            }
        )
        opened += [f"{method} {p}" for p in patterns]
    return [validate_constraint(c) for c in written], opened


def _wire(c: Constraint) -> dict[str, Any]:
    return c.model_dump(mode="json", by_alias=True)


@handlers.on(GrantAccessCommand)
async def grant_access(svc: AuthService, op: GrantAccessCommand, call: Call) -> AccessGranted:
    """Validate both tiers' constraints, check the right to create each, then write the missing ones in one
    transaction (all or none); one that exists as asked is kept, one that differs is a 409."""
    principal = call.principal
    constraints, opened = _constraints(op)
    for c in constraints:
        await svc.check_route(principal, "POST", f"/auth/constraints/{c.constraint_id}")
    try:
        written = await _write(svc, call, constraints)
    except AlreadyExistsError:  # a concurrent grant wrote first: it holds these constraints, or it differs
        written = await _write(svc, call, constraints)
    ids = [c.constraint_id for c in constraints]
    return AccessGranted(
        message=(
            f"Granted {', '.join(sorted(set(op.methods)))} on {op.object_type} objects to role "
            f"'{op.role_name}' ({written} constraint(s) written)."
        ),
        constraint_ids=ids,
        routes=opened,
        created=written > 0,
    )


async def _write(svc: AuthService, call: Call, constraints: list[Constraint]) -> int:
    """Insert the constraints not stored yet; the number inserted. One stored under an id with other content
    is a 409 and nothing is written."""
    store = svc.store
    at = ts(now())
    async with store.transaction():
        fresh = []
        for c in constraints:
            row = await store.get_constraint(c.constraint_id)
            if row is None:
                fresh.append({"id": c.constraint_id, "type": c.object_type, "data": json.dumps(_wire(c)), "at": at})
            elif json.loads(row["data"]) != _wire(c):
                raise AlreadyExistsError(
                    "constraint",
                    c.constraint_id,
                    f"Constraint '{c.constraint_id}' exists with other content; nothing was granted "
                    "(give another grant_id, or change the constraint with update_constraint).",
                )
        if fresh:
            await store.insert_constraints(fresh)
            await bump(svc, call)
    return len(fresh)
