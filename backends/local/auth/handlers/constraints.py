"""Handlers: permission constraints and the permissionObjects table.

Every write validates with `validate_constraint`, runs in one transaction and bumps the policy version, so
the next decision of any process sees it. Lookups are by exact id (never a prefix: deleting `c1` leaves
`c10`).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import AlreadyExistsError, NotFoundError, StateConflictError, ValidationError
from pluginsdk.models.auth import Constraint, validate_constraint
from pluginsdk.models.auth_results import (
    ConstraintItems,
    ConstraintList,
    ConstraintWritten,
    LabelValue,
    ObjectTypeInfo,
    PermissionObjects,
    PermissionObjectsBody,
)
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES, OPERATORS, PERMISSION_TYPES, PERMISSIONS
from pluginsdk.models.policy_results import ConstraintImported
from pluginsdk.operations.constraints import (
    CONSTRAINT_ID_PATTERN,
    IMPORT_MAX_TEXT,
    RESERVED_ID,
    CreateConstraintCommand,
    DeleteConstraintCommand,
    GetConstraintQuery,
    GetPermissionObjectsQuery,
    ImportConstraintsTemplateCommand,
    ListConstraintsQuery,
    UpdateConstraintCommand,
)
from pluginsdk.principal import Principal

from ...registry import HandlerTable
from ..crypto import now, ts
from ..service import AuthService
from ._common import bump
from .policy_checks import import_dry_run

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)

PAGE_MAX = 3000
_UPSERT_TRIES = 3
"""Rounds of insert-then-replace before an upsert gives up (only while others create and delete the id)."""
_VARIABLE = re.compile(r"{{\s*([A-Za-z_][A-Za-z0-9_]*)\s*}}")


def _wire(c: Constraint) -> dict[str, Any]:
    """The stored (and served) form: camelCase, the wire shape."""
    return c.model_dump(mode="json", by_alias=True)


def _validated(op: CreateConstraintCommand | UpdateConstraintCommand) -> Constraint:
    return validate_constraint(
        Constraint(
            constraint_id=op.constraint_id,
            name=op.name,
            description=op.description,
            object_type=op.object_type,
            criteria_and=op.criteria_and or [],
            criteria_or=op.criteria_or or [],
            group_permissions=op.group_permissions,
            user_permissions=op.user_permissions or [],
        )
    )


def _written(c: Constraint, operation: str, verb: str) -> ConstraintWritten:
    return ConstraintWritten(
        constraint_id=c.constraint_id,
        operation=operation,
        message=f"Constraint '{c.constraint_id}' {verb}.",
        constraint=json.dumps({"identifier": c.constraint_id, **_wire(c)}),
    )


@handlers.on(ListConstraintsQuery)
async def list_constraints(svc: AuthService, op: ListConstraintsQuery, call: Call) -> ConstraintList:
    size = min(op.page_size, op.max_items, PAGE_MAX)
    pos = svc.decode_page("constraints", op.starting_token)
    after = str(pos.get("a", "")) if pos is not None else None
    rows = await svc.store.page_constraints(after, size + 1)
    more = len(rows) > size
    rows = rows[:size]
    items = [Constraint.model_validate(json.loads(r["data"])) for r in rows]
    token = svc.encode_page("constraints", {"a": rows[-1]["constraint_id"]}) if more else None
    return ConstraintList(message=ConstraintItems(items=items, next_token=token))


@handlers.on(GetConstraintQuery)
async def get_constraint(svc: AuthService, op: GetConstraintQuery, call: Call) -> Constraint:
    row = await svc.store.get_constraint(op.constraint_id)
    if row is None:
        raise NotFoundError("constraint", op.constraint_id)
    return Constraint.model_validate(json.loads(row["data"]))


@handlers.on(CreateConstraintCommand)
async def create_constraint(svc: AuthService, op: CreateConstraintCommand, call: Call) -> ConstraintWritten:
    principal = call.principal
    store = svc.store
    c = _validated(op)
    data = json.dumps(_wire(c))
    # insert-if-new and replace are each one statement, so callers racing on one id (any process) each get
    # created or updated; a replace that finds the constraint deleted meanwhile inserts it again
    for _ in range(_UPSERT_TRIES):
        async with store.transaction():
            if await store.insert_constraint(c.constraint_id, c.object_type, data, ts(now())):
                await bump(svc, call)
                return _written(c, "create", "created")
        if not op.replace_existing:
            raise AlreadyExistsError("constraint", c.constraint_id)
        await _may_replace(svc, principal, [c])
        async with store.transaction():
            if await store.update_constraint(c.constraint_id, c.object_type, data, ts(now())):
                await bump(svc, call)
                return _written(c, "update", "updated")
    raise StateConflictError(
        f"Constraint '{c.constraint_id}' is being created and deleted by other callers; retry.",
        details={"field": "constraint_id", "value": c.constraint_id},
    )


async def _may_replace(svc: AuthService, principal: Principal, replaced: list[Constraint]) -> None:
    """Replacing stored constraints needs, for each, what `PUT /auth/constraints/{id}` needs (tier 1 on that
    path, tier 2 if the operation has one), whatever route the replace comes through; 403 otherwise."""
    spec = UpdateConstraintCommand.spec
    calls = [(_as_update(c), f"/auth/constraints/{c.constraint_id}") for c in replaced]
    await svc.authorize_also(principal, spec, calls)


def _as_update(c: Constraint) -> UpdateConstraintCommand:
    return UpdateConstraintCommand.model_construct(**{name: getattr(c, name) for name in _UPDATE_FIELDS})


_UPDATE_FIELDS = (
    "constraint_id",
    "name",
    "description",
    "object_type",
    "criteria_and",
    "criteria_or",
    "group_permissions",
    "user_permissions",
)


@handlers.on(UpdateConstraintCommand)
async def update_constraint(svc: AuthService, op: UpdateConstraintCommand, call: Call) -> ConstraintWritten:
    store = svc.store
    c = _validated(op)
    async with store.transaction():
        if not await store.update_constraint(c.constraint_id, c.object_type, json.dumps(_wire(c)), ts(now())):
            raise NotFoundError("constraint", c.constraint_id)
        await bump(svc, call)
    return _written(c, "update", "updated")


@handlers.on(DeleteConstraintCommand)
async def delete_constraint(svc: AuthService, op: DeleteConstraintCommand, call: Call) -> ConstraintWritten:
    store = svc.store
    async with store.transaction():
        if not await store.delete_constraint(op.constraint_id):
            raise NotFoundError("constraint", op.constraint_id)
        await bump(svc, call)
    return ConstraintWritten(
        constraint_id=op.constraint_id, operation="delete", message=f"Constraint '{op.constraint_id}' deleted."
    )


def _substitute(value: Any, variables: dict[str, str], where: str, room: list[int]) -> Any:
    """Replace {{NAME}} in every string (not in keys), literally and in one pass. `room` holds the characters the
    substituted strings may still take (`IMPORT_MAX_TEXT`): each string's size is known before it is built, so a
    large value referenced many times is refused, not expanded."""
    if isinstance(value, str):

        def one(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in variables:
                raise ValidationError(
                    f"Template variable {{{{{name}}}}} in {where} has no value.",
                    details={"field": f"variables.{name}", "value": None, "expected": "a value in variables"},
                )
            return variables[name]

        size = len(value) + sum(len(variables.get(m.group(1), "")) - len(m.group(0)) for m in _VARIABLE.finditer(value))
        room[0] -= size
        if room[0] < 0:
            raise ValidationError(
                f"The template is too large once its variables are substituted (at {where}): more than "
                f"{IMPORT_MAX_TEXT:,} characters of text.",
                details={"field": "variables", "value": None, "expected": f"at most {IMPORT_MAX_TEXT} characters"},
            )
        return _VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [_substitute(v, variables, where, room) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, variables, where, room) for k, v in value.items()}
    return value


def _prefixed(exc: ValidationError, where: str) -> ValidationError:
    details = dict(exc.details or {})
    details["field"] = f"{where}.{details.get('field', '')}".rstrip(".")
    return ValidationError(f"{where}: {exc.message}", details=details)


@handlers.on(ImportConstraintsTemplateCommand)
async def import_constraints_template(
    svc: AuthService, op: ImportConstraintsTemplateCommand, call: Call
) -> ConstraintImported:
    """Parse every constraint of the template (variables substituted), then write them all or none."""
    room = [IMPORT_MAX_TEXT]
    parsed = [
        _template_constraint(raw, op.variables, f"constraints[{i}]", room) for i, raw in enumerate(op.constraints)
    ]
    ids = [c.constraint_id for c in parsed]
    _check_unique(ids)
    if op.dry_run:  # report the decisions it would change, write nothing
        return await import_dry_run(svc, ids, [_wire(c) for c in parsed])
    replaced = await _write_imported(svc, call, parsed, overwrite=op.overwrite)
    return ConstraintImported(message=f"Imported {len(ids)} constraint(s) ({replaced} replaced).", constraint_ids=ids)


def _template_constraint(raw: dict[str, Any], variables: dict[str, str], where: str, room: list[int]) -> Constraint:
    """One constraint of a template: variables substituted (within `room`), its id checked (or a new one),
    validated."""
    body = _substitute(raw, variables, where, room)
    cid = body.pop("constraintId", None) or body.pop("constraint_id", None) or str(uuid.uuid4())
    if not isinstance(cid, str) or not re.fullmatch(CONSTRAINT_ID_PATTERN, cid) or cid == RESERVED_ID:
        raise ValidationError(
            f"{where}: constraintId {cid!r} is not valid.",
            details={"field": f"{where}.constraintId", "value": str(cid), "expected": CONSTRAINT_ID_PATTERN},
        )
    body.pop("identifier", None)
    try:
        return validate_constraint({**body, "constraintId": cid})
    except ValidationError as exc:
        raise _prefixed(exc, where) from None


def _check_unique(ids: list[str]) -> None:
    seen: set[str] = set()
    for cid in ids:
        if cid in seen:
            raise ValidationError(
                f"constraintId '{cid}' appears twice in the template.",
                details={"field": "constraints.constraintId", "value": cid, "expected": "unique ids"},
            )
        seen.add(cid)


async def _write_imported(svc: AuthService, call: Call, parsed: list[Constraint], *, overwrite: bool) -> int:
    """Insert the new constraints and replace the existing ones (only with `overwrite`, each allowed as its
    `PUT` would be), in one transaction; the number replaced.

    The replaces are authorized before the transaction (a decision may read the policy, which waits for
    the store); an id that came to exist after that was not authorized, so nothing is written (409)."""
    store = svc.store
    ids = [c.constraint_id for c in parsed]
    checked = await store.existing_constraint_ids(ids) if overwrite else set()
    if checked:
        await _may_replace(svc, call.principal, [c for c in parsed if c.constraint_id in checked])
    at = ts(now())
    async with store.transaction():
        existing = await store.existing_constraint_ids(ids)
        unchecked = existing - checked
        if unchecked:
            first = sorted(unchecked)[0]
            raise AlreadyExistsError(
                "constraint",
                first,
                f"{len(unchecked)} constraint(s) of the template exist already (first: '{first}'); "
                "nothing was imported. Send overwrite=true to replace them."
                if not overwrite
                else f"Constraint '{first}' was created while the template was imported; nothing was imported. "
                "Send the import again.",
            )
        fresh = []
        for c in parsed:
            data = json.dumps(_wire(c))
            if c.constraint_id in existing:
                await store.update_constraint(c.constraint_id, c.object_type, data, at)
            else:
                fresh.append({"id": c.constraint_id, "type": c.object_type, "data": data, "at": at})
        if fresh:
            await store.insert_constraints(fresh)
        await bump(svc, call)
    return len(existing)


def _label(name: str) -> str:
    """`databaseId` -> `Database Id`, `route__path` -> `Route Path`, `is_one_of` -> `Is One Of`."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    return " ".join(w[:1].upper() + w[1:] for w in words)


@handlers.on(GetPermissionObjectsQuery)
async def get_permission_objects(svc: AuthService, op: GetPermissionObjectsQuery, call: Call) -> PermissionObjects:
    return PermissionObjects(
        message=PermissionObjectsBody(
            object_types=[
                ObjectTypeInfo(label=_label(t), value=t, fields=[LabelValue(label=_label(f), value=f) for f in fields])
                for t, fields in OBJECT_TYPES.items()
            ],
            operators=[LabelValue(label=_label(o), value=o) for o in OPERATORS],
            permissions=[LabelValue(label=p, value=p) for p in PERMISSIONS],
            permission_types=[LabelValue(label=_label(p), value=p) for p in PERMISSION_TYPES],
        )
    )
