"""Permission constraints: list, get, create, update, delete, template import, and the permissionObjects table.

Constraints are protected by tier 1 only (the `/auth/constraints` routes): they are the policy itself, so
whoever may call a route may see or change every constraint behind it. The write-time rules (object type,
fields valid for it, operators, permissions, description length) live in one place,
`pluginsdk.models.validate_constraint`, which the engine applies on create, update and import.
"""

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator

from .._pagination import PageToken
from ..models.auth import (
    DESCRIPTION_MAX,
    DESCRIPTION_MIN,
    Constraint,
    CriterionInput,
    GroupPermissionInput,
    UserPermissionInput,
)
from ..models.auth_results import ConstraintList, ConstraintWritten, PermissionObjects
from ..models.auth_vocabulary import OBJECT_TYPES
from ..models.identifiers import CONSTRAINT_ID_PATTERN
from ..models.identifiers import ConstraintId as _ConstraintIdText
from ..models.policy_results import ConstraintImported
from ._base import Audit, Cli, Command, Policy, Query, R_co, Rest

__all__ = [
    "CONSTRAINT_ID_PATTERN",
    "IMPORT_MAX_TEXT",
    "RESERVED_ID",
    "CreateConstraintCommand",
    "DeleteConstraintCommand",
    "GetConstraintQuery",
    "GetPermissionObjectsQuery",
    "ImportConstraintsTemplateCommand",
    "ListConstraintsQuery",
    "UpdateConstraintCommand",
]

RESERVED_ID = "permissionObjects"
"""The name of a route under /auth/constraints, so never a constraint id."""
IMPORT_MAX_TEXT = 4_000_000
"""Most characters of text a template import's constraints may hold once `{{VARIABLE}}`s are substituted (a
large value referenced many times is refused before it is expanded)."""


def _not_reserved(value: str) -> str:
    if value == RESERVED_ID:
        raise ValueError(f"{RESERVED_ID!r} is reserved (it names a route), choose another id")
    return value


ConstraintId = Annotated[_ConstraintIdText, AfterValidator(_not_reserved)]
"""1-128 of letters, digits, `_ - . :`, not the reserved route name."""

_CONSTRAINTS = Policy(category="constraints")

_DESCRIPTION = rf"^\s*\S[\s\S]{{{DESCRIPTION_MIN - 2},{DESCRIPTION_MAX - 2}}}\S\s*$"
"""The description rule `validate_constraint` applies, for the JSON schema: 4-256 characters after trimming."""


class ListConstraintsQuery(Query[ConstraintList]):
    """List permission constraints, in id order, a page at a time.

    The page holds the smallest of page_size, max_items and 3000 constraints; pass `NextToken` back
    unmodified as starting_token until it is absent.
    """

    rest = Rest("GET", "/auth/constraints", camel=True)
    cli = Cli("constraints", "list")
    policy = _CONSTRAINTS

    max_items: int = Field(30000, ge=1, le=30000)
    """Most constraints to return (1-30000)."""
    page_size: int = Field(3000, ge=1, le=10000)
    """Constraints per page (1-10000; above 3000 served in pages of 3000)."""
    starting_token: PageToken | None = None
    """NextToken of the previous page, unmodified."""


class GetConstraintQuery(Query[Constraint]):
    """Get one permission constraint by id."""

    rest = Rest("GET", "/auth/constraints/{constraint_id}", camel=True)
    cli = Cli("constraints", "show", args=("constraint_id",))
    policy = _CONSTRAINTS

    constraint_id: ConstraintId
    """The constraint's id (exact: `c1` never reads `c10`)."""


class _ConstraintBody(Command[R_co]):
    ignored_fields = ("appliesTo",)
    """The VAMS web client's constraint form sends `appliesTo`; nothing here reads it."""

    constraint_id: ConstraintId
    """The constraint's id (1-128 of letters, digits, _ - . :)."""
    name: str = Field(min_length=1, max_length=256)
    """Human-readable name."""
    description: str = Field(max_length=1024, json_schema_extra={"pattern": _DESCRIPTION})
    """Purpose of the constraint (4-256 characters after trimming)."""
    object_type: str = Field(json_schema_extra={"enum": list(OBJECT_TYPES)})
    """What it protects: one of the object types get_permission_objects lists (asset, database, api, web, ...)."""
    criteria_and: list[CriterionInput] | None = Field(None, max_length=100)
    """Criteria that must all match ({field, operator, value}; `*` in a value matches any run of characters)."""
    criteria_or: list[CriterionInput] | None = Field(None, max_length=100)
    """Criteria of which at least one must match."""
    group_permissions: list[GroupPermissionInput] = Field(min_length=1, max_length=500)
    """Permissions for roles: {groupId, permission: GET|PUT|POST|DELETE, permissionType: allow|deny}."""
    user_permissions: list[UserPermissionInput] | None = Field(None, max_length=500)
    """Permissions for named users: {userId, permission, permissionType}."""


class CreateConstraintCommand(_ConstraintBody[ConstraintWritten]):
    """Create a permission constraint (409 if the id exists, unless `replace_existing`); the next decision uses it.

    Over REST `replace_existing` defaults to true: the VAMS web client edits a constraint by re-POSTing the
    listed record to its id (the VAMS backend upserts there). Replacing needs what `PUT` of the same path
    needs, so a caller who may create but not update gets 403 and the constraint stays as it was.
    """

    rest = Rest("POST", "/auth/constraints/{constraint_id}", camel=True, defaults={"replace_existing": True})
    cli = Cli("constraints", "create", args=("constraint_id",))
    policy = _CONSTRAINTS._replace(audit=Audit("constraint", ("constraint_id",), snapshot=True), writes_policy=True)

    replace_existing: bool = False
    """Replace the constraint if the id exists (needs the right to PUT it); default false (409), true on REST."""


class UpdateConstraintCommand(_ConstraintBody[ConstraintWritten]):
    """Replace a permission constraint with this body (404 if it does not exist)."""

    rest = Rest("PUT", "/auth/constraints/{constraint_id}", camel=True)
    cli = Cli("constraints", "update", args=("constraint_id",))
    policy = _CONSTRAINTS._replace(audit=Audit("constraint", ("constraint_id",), snapshot=True), writes_policy=True)


class DeleteConstraintCommand(Command[ConstraintWritten]):
    """Delete one permission constraint (exactly that id)."""

    rest = Rest("DELETE", "/auth/constraints/{constraint_id}", camel=True)
    cli = Cli("constraints", "delete", args=("constraint_id",))
    policy = _CONSTRAINTS._replace(audit=Audit("constraint", ("constraint_id",), snapshot=True), writes_policy=True)

    constraint_id: ConstraintId
    """The constraint's id."""


class ImportConstraintsTemplateCommand(Command[ConstraintImported]):
    """Create many constraints from a template, all or nothing.

    Every `{{NAME}}` in a string value of `constraints` is replaced by `variables[NAME]` (literal text, one
    pass; an unknown name is an error). Each constraint is then validated like a create; if any is invalid,
    or an id exists already (and `overwrite` is false), nothing is written. A constraint without an id
    gets a generated one.
    """

    rest = Rest("POST", "/auth/constraintsTemplateImport", camel=True)
    cli = Cli("constraints", "import")
    policy = _CONSTRAINTS._replace(
        audit=Audit("constraint", ("constraint_ids",), snapshot=True, each_constraint=True), writes_policy=True
    )
    field_aliases = {"variables": ("variableValues",)}

    constraints: list[dict[str, Any]] = Field(min_length=1, max_length=10000)
    """The constraints, each shaped like a create_constraint input (its id optional); may hold {{VARIABLE}}."""
    variables: dict[str, str] = {}
    """Values for the {{VARIABLE}} references (names: letters, digits, _)."""
    name: str | None = Field(None, max_length=256)
    """Name of the template (informational)."""
    description: str | None = Field(None, max_length=1024)
    """Description of the template (informational)."""
    metadata: dict[str, Any] | None = None
    """Free-form information about the template; not stored."""
    overwrite: bool = False
    """Replace constraints whose id exists already, each as its `PUT` would (403 when the caller may not);
    otherwise such an import is rejected with 409."""
    dry_run: bool = False
    """Write nothing: validate and report in `what_if` the decisions the import would change."""

    @field_validator("variables")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
                raise ValueError(f"variable name {name!r} must be letters, digits and _ (not starting with a digit)")
        return value


class GetPermissionObjectsQuery(Query[PermissionObjects]):
    """The authoritative values: object types and their fields, operators, permissions, permission types."""

    rest = Rest("GET", "/auth/constraints/permissionObjects", camel=True)
    cli = Cli("constraints", "permission-objects")
    policy = _CONSTRAINTS
