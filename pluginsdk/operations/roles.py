"""Roles and user-role assignments."""

from pydantic import Field, field_validator, model_validator

from ..models.auth_results import RoleList, RoleWritten, UserRoleList, UserRolesWritten
from ._base import Audit, Cli, Command, Policy, Query, R_co, Rest
from .auth_fields import Description, PartialUpdate, RoleName, UserId, check_role_names, strip_text

__all__ = [
    "CreateRoleCommand",
    "CreateUserRolesCommand",
    "DeleteRoleCommand",
    "DeleteUserRolesCommand",
    "ListRolesQuery",
    "ListUserRolesQuery",
    "UpdateRoleCommand",
    "UpdateUserRolesCommand",
]

_ROLE = Policy(object_type="role", fields={"roleName": "role_name"}, category="roles")
_USER_ROLE = Policy(object_type="userRole", fields={"userId": "user_id", "roleName": "role_name"}, category="userRoles")


class ListRolesQuery(Query[RoleList]):
    """List roles."""

    rest = Rest("GET", "/roles", camel=True)
    cli = Cli("roles", "list")
    policy = Policy(object_type="role", category="roles", lockout_probe=True)


class CreateRoleCommand(Command[RoleWritten]):
    """Create a role."""

    rest = Rest("POST", "/roles", camel=True)
    ignored_fields = ("id",)
    """The VAMS web client's role form always sends `id: ""`; roles are named by `roleName`."""
    cli = Cli("roles", "create", args=("role_name",))
    policy = _ROLE._replace(
        audit=Audit("role", ("role_name", "role_id"), snapshot=True), writes_policy=True, lockout_probe=True
    )

    role_name: RoleName
    """Unique name (1-64 of letters, digits, - _ . and space); cannot change later."""
    description: Description
    """What the role is for (4-256 characters after trimming)."""
    source: str | None = None
    """Where the role comes from (e.g. INTERNAL_SYSTEM)."""
    source_identifier: str | None = None
    """Identifier within the source."""
    mfa_required: bool = False
    """Apply this role's constraints only to multi-factor sessions."""


class UpdateRoleCommand(PartialUpdate[RoleWritten], Command):
    """Update a role: only the fields given change (source null clears it; description cannot be null)."""

    rest = Rest("PUT", "/roles", camel=True)
    ignored_fields = ("id",)
    cli = Cli("roles", "update", args=("role_name",))
    policy = _ROLE._replace(
        stored="role_name",
        audit=Audit("role", ("role_name", "role_id"), snapshot=True),
        writes_policy=True,
        lockout_probe=True,
    )

    role_name: RoleName
    """Role to update."""
    description: str | None = Field(None, min_length=4, max_length=256)
    """New description; omit to keep it (null is rejected)."""
    source: str | None = None
    """New source; null clears it."""
    source_identifier: str | None = None
    """New source identifier; null clears it."""
    mfa_required: bool | None = None
    """New MFA requirement; send false to clear it."""

    _strip = field_validator("description", mode="before")(strip_text)

    @model_validator(mode="after")
    def _something_to_change(self) -> "UpdateRoleCommand":
        given = self.model_fields_set - {"role_name"}
        if not given:
            raise ValueError("give at least one of description, source, sourceIdentifier, mfaRequired besides roleName")
        if "description" in given and self.description is None:
            raise ValueError("description cannot be null; omit it to leave it unchanged")
        if "mfa_required" in given and self.mfa_required is None:
            raise ValueError("mfaRequired cannot be null; send false to clear it")
        return self


class DeleteRoleCommand(Command[RoleWritten]):
    """Delete a role (user-role assignments naming it stay; clean them up separately)."""

    rest = Rest("DELETE", "/roles/{role_id}", camel=True)
    cli = Cli("roles", "delete", args=("role_id",))
    policy = Policy(
        object_type="role",
        fields={"roleName": "role_id"},
        category="roles",
        stored="role_id",
        audit=Audit("role", ("role_name", "role_id"), snapshot=True),
        writes_policy=True,
    )

    role_id: RoleName
    """Name of the role to delete."""


class ListUserRolesQuery(Query[UserRoleList]):
    """List user-role assignments, one entry per user."""

    rest = Rest("GET", "/user-roles", camel=True)
    cli = Cli("user-roles", "list")
    policy = Policy(object_type="userRole", category="userRoles", lockout_probe=True)


class _UserRoles(Command[R_co]):
    user_id: UserId
    """The user."""
    role_name: list[RoleName] = Field(min_length=1, max_length=100)
    """Role names (each must exist)."""

    _names = field_validator("role_name")(check_role_names)


class CreateUserRolesCommand(_UserRoles[UserRolesWritten]):
    """Give a user roles (each pair may exist only once)."""

    rest = Rest("POST", "/user-roles", camel=True)
    cli = Cli("user-roles", "create", args=("user_id", "role_name"))
    policy = _USER_ROLE._replace(
        audit=Audit("userRole", ("user_id",), snapshot=True), writes_policy=True, lockout_probe=True
    )


class UpdateUserRolesCommand(_UserRoles[UserRolesWritten]):
    """Replace a user's roles with exactly this list."""

    rest = Rest("PUT", "/user-roles", camel=True)
    cli = Cli("user-roles", "replace", args=("user_id", "role_name"))
    policy = _USER_ROLE._replace(
        rule="assignments", audit=Audit("userRole", ("user_id",), snapshot=True), writes_policy=True, lockout_probe=True
    )


class DeleteUserRolesCommand(Command[UserRolesWritten]):
    """Remove every role of a user."""

    rest = Rest("DELETE", "/user-roles", query=(), camel=True)
    cli = Cli("user-roles", "delete", args=("user_id",))
    policy = Policy(
        object_type="userRole",
        fields={"userId": "user_id"},
        category="userRoles",
        rule="assignments",
        audit=Audit("userRole", ("user_id",), snapshot=True),
        writes_policy=True,
        lockout_probe=True,
    )

    user_id: UserId
    """The user whose roles are removed."""
