"""Permission constraints of the auth service, and the permissionObjects table they are checked against.

The models mirror the wire shape (camelCase aliases: `constraintId`, `objectType`, `criteriaAnd`,
`criteriaOr`, `groupPermissions`, `userPermissions`, `groupId`, `permissionType`, `userId`); dump
them with `by_alias=True` for the wire. Field values are plain `str` on purpose: stored constraints
written by older versions must still load (the evaluator ignores what it does not know), so the
write-time rules live in one place, `validate_constraint()`, which raises the SDK's
`ValidationError` with `field`/`value`/`expected` details.

`userPermissions` entries have no shape in the spec; this project uses the group-permission shape
with `userId` in place of `groupId`: `{"userId", "permission", "permissionType"}`.
"""

from collections.abc import Mapping
from typing import Any

import pydantic

from ..errors import ValidationError
from ._base import BaseModel
from .auth_vocabulary import OBJECT_TYPES, OPERATORS, PERMISSION_TYPES, PERMISSIONS
from .identifiers import ROLE_NAME_PATTERN, USER_ID_PATTERN, identifier_problem

__all__ = [
    "Constraint",
    "Criterion",
    "CriterionInput",
    "GroupPermission",
    "GroupPermissionInput",
    "UserPermission",
    "UserPermissionInput",
    "validate_constraint",
]

DESCRIPTION_MIN = 4
DESCRIPTION_MAX = 256
"""Length bounds of a constraint's description, after trimming."""


class Criterion(BaseModel):
    """One comparison of an object field with a value; `*` in the value matches any run of characters."""

    field: str
    value: str
    operator: str


class GroupPermission(BaseModel):
    """Grants (`allow`) or denies (`deny`) one HTTP method to a role (the spec's group)."""

    group_id: str
    permission: str
    """GET, PUT, POST or DELETE."""
    permission_type: str
    """allow or deny."""


class UserPermission(BaseModel):
    """Like `GroupPermission`, for one named user (shape chosen by this project: the spec shows none)."""

    user_id: str
    permission: str
    permission_type: str


def _drop_form_id(data: Any) -> Any:
    """The VAMS constraint form gives every criterion and permission row an `id`; nothing here reads it."""
    if isinstance(data, dict) and "id" in data:
        return {k: v for k, v in data.items() if k != "id"}
    return data


def _form_id_schema(schema: dict[str, Any]) -> None:
    """The row `id` the VAMS form sends, listed in the JSON schema as what it is: accepted and ignored."""
    schema.setdefault("properties", {})["id"] = {"description": "The web form's row id (ignored)."}


_WRITTEN = pydantic.ConfigDict(extra="forbid", json_schema_extra=_form_id_schema)


def _closed(values: Any) -> Any:
    """A field whose JSON schema lists the accepted words (`validate_constraint` checks them, with its messages)."""
    return pydantic.Field(json_schema_extra={"enum": list(values)})


def _identifier(pattern: str) -> Any:
    """A field whose JSON schema states its character set (checked by `validate_constraint`)."""
    return pydantic.Field(json_schema_extra={"pattern": pattern})


class CriterionInput(Criterion):
    """A criterion as written: unknown fields are errors, but for the form's row `id` (ignored). Fields of every
    object type; which fit `objectType` is checked with the constraint."""

    # Stored constraints load with `Criterion`, which ignores what it does not know.

    model_config = _WRITTEN
    _form_id = pydantic.model_validator(mode="before")(_drop_form_id)

    field: str = _closed(dict.fromkeys(f for fields in OBJECT_TYPES.values() for f in fields))
    value: str = _identifier(r"\S")
    """Text to match; not blank (for the `*_one_of` operators: a comma-separated list, not all blank)."""
    operator: str = _closed(OPERATORS)


class GroupPermissionInput(GroupPermission):
    """A group permission as written (row `id` ignored by name, other unknown fields are errors)."""

    model_config = _WRITTEN
    _form_id = pydantic.model_validator(mode="before")(_drop_form_id)

    group_id: str = _identifier(ROLE_NAME_PATTERN)
    permission: str = _closed(PERMISSIONS)
    permission_type: str = _closed(PERMISSION_TYPES)


class UserPermissionInput(UserPermission):
    """A user permission as written (row `id` ignored by name, other unknown fields are errors)."""

    model_config = _WRITTEN
    _form_id = pydantic.model_validator(mode="before")(_drop_form_id)

    user_id: str = _identifier(USER_ID_PATTERN)
    permission: str = _closed(PERMISSIONS)
    permission_type: str = _closed(PERMISSION_TYPES)


class Constraint(BaseModel):
    """A permission constraint: which objects of one type (criteria) which roles/users may act on (permissions)."""

    constraint_id: str = ""
    """Unique identifier (the path parameter on create)."""
    name: str
    description: str
    object_type: str
    criteria_and: list[Criterion] = []
    """All must match."""
    criteria_or: list[Criterion] = []
    """When present, at least one must match."""
    group_permissions: list[GroupPermission] = []
    user_permissions: list[UserPermission] = []


_MAX_GRANTS = 500
"""Most group (and user) permissions of one constraint, as a create takes them (criteria: 100 each)."""


def _invalid(message: str, field: str, value: Any, expected: Any) -> ValidationError:
    return ValidationError(message, details={"field": field, "value": value, "expected": expected})


def _check_permission(where: str, permission: str, permission_type: str) -> None:
    if permission not in PERMISSIONS:
        raise _invalid(f"Invalid permission '{permission}'.", f"{where}.permission", permission, list(PERMISSIONS))
    if permission_type not in PERMISSION_TYPES:
        raise _invalid(
            f"Invalid permissionType '{permission_type}'.",
            f"{where}.permissionType",
            permission_type,
            list(PERMISSION_TYPES),
        )


def validate_constraint(constraint: Constraint | Mapping[str, Any]) -> Constraint:
    """Check a constraint against the write-time rules and return it normalised (description trimmed).

    Used on create, update and template import; the evaluator itself never rejects stored data
    (unknown fields are ignored there), so everything a writer can get wrong is caught here.
    """
    c = constraint if isinstance(constraint, Constraint) else _parsed(constraint)
    description = _check_identity(c)
    _check_criteria(c)
    if not c.group_permissions:
        raise _invalid(
            "A constraint needs at least one group permission.", "groupPermissions", [], "at least one entry"
        )
    for key, grants in (("groupPermissions", c.group_permissions), ("userPermissions", c.user_permissions)):
        if len(grants) > _MAX_GRANTS:
            raise _invalid(f"{key} has {len(grants)} entries; at most {_MAX_GRANTS}.", key, len(grants), "<= 500")
    _check_grants(
        ("groupPermissions", "groupId", "role name", "1-64 of letters, digits, - _ . and space"),
        [(gp.group_id, gp.permission, gp.permission_type) for gp in c.group_permissions],
    )
    _check_grants(
        ("userPermissions", "userId", "user id", "3-256 of letters, digits, _ - . + @"),
        [(up.user_id, up.permission, up.permission_type) for up in c.user_permissions],
    )
    return c if description == c.description else c.model_copy(update={"description": description})


def _parsed(constraint: Mapping[str, Any]) -> Constraint:
    """A constraint from plain data; pydantic's first complaint as the one error."""
    try:
        return Constraint.model_validate(constraint)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise _invalid(f"Invalid constraint: {where}: {err['msg']}", where, err.get("input"), err["type"]) from None


def _check_identity(c: Constraint) -> str:
    """Id, name and description; returns the description trimmed."""
    if c.constraint_id:
        problem = identifier_problem("constraint id", c.constraint_id)
        if problem is not None:
            raise _invalid(f"Invalid constraintId: {problem}.", "constraintId", c.constraint_id, "a constraint id")
    if not c.name.strip():
        raise _invalid("A constraint needs a name.", "name", c.name, "non-empty text")
    description = c.description.strip()
    if not DESCRIPTION_MIN <= len(description) <= DESCRIPTION_MAX:
        raise _invalid(
            f"description must be {DESCRIPTION_MIN} to {DESCRIPTION_MAX} characters after trimming.",
            "description",
            c.description,
            f"{DESCRIPTION_MIN}..{DESCRIPTION_MAX} characters",
        )
    return description


def _check_criteria(c: Constraint) -> None:
    """A known object type, at least one criterion, each on a field of that type with a known operator and a value."""
    fields = OBJECT_TYPES.get(c.object_type)
    if fields is None:
        raise _invalid(f"Unknown objectType '{c.object_type}'.", "objectType", c.object_type, list(OBJECT_TYPES))
    for key, criteria, most in (("criteriaAnd", c.criteria_and, 100), ("criteriaOr", c.criteria_or, 100)):
        if len(criteria) > most:
            raise _invalid(f"{key} has {len(criteria)} entries; at most {most}.", key, len(criteria), f"<= {most}")
    if not c.criteria_and and not c.criteria_or:
        raise _invalid(
            "A constraint needs at least one criterion in criteriaAnd or criteriaOr.",
            "criteriaAnd",
            [],
            "at least one criterion in criteriaAnd or criteriaOr",
        )
    for key, criteria in (("criteriaAnd", c.criteria_and), ("criteriaOr", c.criteria_or)):
        for i, crit in enumerate(criteria):
            where = f"{key}[{i}]"
            if crit.field not in fields:
                raise _invalid(
                    f"Field '{crit.field}' is not valid for objectType '{c.object_type}'.",
                    f"{where}.field",
                    crit.field,
                    list(fields),
                )
            if crit.operator not in OPERATORS:
                raise _invalid(
                    f"Unknown operator '{crit.operator}'.", f"{where}.operator", crit.operator, list(OPERATORS)
                )
            items = crit.value.split(",") if crit.operator.endswith("_one_of") else [crit.value]
            if not any(item.strip() for item in items):
                raise _invalid("A criterion needs a non-empty value.", f"{where}.value", crit.value, "non-empty text")


def _check_grants(names: tuple[str, str, str, str], grants: list[tuple[str, str, str]]) -> None:
    """Each (grantee, permission, permission type) of one list; `names`: the list's key, the grantee's key,
    what the grantee is (for `identifier_problem`) and what it may be (for the error)."""
    key, id_key, kind, expected = names
    for i, (grantee, permission, permission_type) in enumerate(grants):
        problem = identifier_problem(kind, grantee)
        if problem is not None:
            raise _invalid(f"Invalid {id_key}: {problem}.", f"{key}[{i}].{id_key}", grantee, expected)
        _check_permission(f"{key}[{i}]", permission, permission_type)
