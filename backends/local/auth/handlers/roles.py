"""Handlers: roles and user-role assignments."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import TYPE_CHECKING

from pluginsdk.errors import AlreadyExistsError, NotFoundError, ValidationError
from pluginsdk.models.auth_results import (
    RoleItems,
    RoleList,
    RoleWritten,
    UserRoleAssignment,
    UserRoleItems,
    UserRoleList,
    UserRolesWritten,
)
from pluginsdk.operations.roles import (
    CreateRoleCommand,
    CreateUserRolesCommand,
    DeleteRoleCommand,
    DeleteUserRolesCommand,
    ListRolesQuery,
    ListUserRolesQuery,
    UpdateRoleCommand,
    UpdateUserRolesCommand,
)
from pluginsdk.principal import Principal

from ...registry import HandlerTable
from ..crypto import now, parse_ts, ts
from ..service import AuthService
from ._common import bump, role_from_row

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)


@handlers.on(ListRolesQuery)
async def list_roles(svc: AuthService, op: ListRolesQuery, call: Call) -> RoleList:
    principal = call.principal
    rows = await svc.store.list_roles(await svc.plan(principal, "role", "GET"))
    roles = [role_from_row(r) for r in rows]
    roles = await svc.filter_allowed(principal, "role", roles, lambda r: {"roleName": r.role_name}, "GET")
    return RoleList(message=RoleItems(items=roles))


@handlers.on(CreateRoleCommand)
async def create_role(svc: AuthService, op: CreateRoleCommand, call: Call) -> RoleWritten:
    store = svc.store
    async with store.transaction():
        await store.insert_role(
            {
                "role_name": op.role_name,
                "id": str(uuid.uuid4()),
                "description": op.description,
                "source": op.source,
                "source_identifier": op.source_identifier,
                "mfa_required": int(op.mfa_required),
                "created_on": ts(now()),
            }
        )
        await bump(svc, call)
    return RoleWritten(role_name=op.role_name, operation="create", message=f"Role '{op.role_name}' created.")


@handlers.on(UpdateRoleCommand)
async def update_role(svc: AuthService, op: UpdateRoleCommand, call: Call) -> RoleWritten:
    store = svc.store
    changes: dict[str, object] = {}
    for name in ("description", "source", "source_identifier", "mfa_required"):
        if name in op.model_fields_set:
            value = getattr(op, name)
            changes[name] = int(value) if isinstance(value, bool) else value
    async with store.transaction():
        if not await store.update_role(op.role_name, changes):
            raise NotFoundError("role", op.role_name, f"Role '{op.role_name}' not found.")
        await bump(svc, call)
    return RoleWritten(role_name=op.role_name, operation="update", message=f"Role '{op.role_name}' updated.")


@handlers.on(DeleteRoleCommand)
async def delete_role(svc: AuthService, op: DeleteRoleCommand, call: Call) -> RoleWritten:
    store = svc.store
    async with store.transaction():
        if not await store.delete_role(op.role_id):
            raise NotFoundError("role", op.role_id, f"Role '{op.role_id}' not found.")
        await bump(svc, call)
    return RoleWritten(
        role_name=op.role_id,
        operation="delete",
        message=f"Role '{op.role_id}' deleted; user-role assignments naming it remain until removed.",
    )


@handlers.on(ListUserRolesQuery)
async def list_user_roles(svc: AuthService, op: ListUserRolesQuery, call: Call) -> UserRoleList:
    """Each assignment (user, role) is decided on its own, by the plan in the store and again here, with the
    attributes `check_access` and the writes decide one on; a user is listed with the roles allowed."""
    principal = call.principal
    rows = await svc.store.user_role_rows(access=await svc.plan(principal, "userRole", "GET"))
    rows = await svc.filter_allowed(
        principal, "userRole", rows, lambda r: {"userId": r["user_id"], "roleName": r["role_name"]}, "GET"
    )
    by_user: dict[str, list[str]] = defaultdict(list)
    created: dict[str, str] = {}
    for r in rows:
        by_user[r["user_id"]].append(r["role_name"])
        created[r["user_id"]] = min(created.get(r["user_id"], r["created_on"]), r["created_on"])
    items = [
        UserRoleAssignment(user_id=u, role_name=names, created_on=parse_ts(created[u])) for u, names in by_user.items()
    ]
    return UserRoleList(message=UserRoleItems(items=items))


async def _check_roles_exist(svc: AuthService, names: list[str]) -> None:
    existing = await svc.store.existing_roles(names)
    missing = [n for n in names if n not in existing]
    if missing:
        raise ValidationError(
            f"Unknown {'role' if len(missing) == 1 else 'roles'}: {', '.join(repr(m) for m in missing)}; create "
            f"{'it' if len(missing) == 1 else 'them'} first.",
            details={"field": "role_name", "value": missing[0], "expected": "an existing role name"},
        )


@handlers.on(CreateUserRolesCommand)
async def create_user_roles(svc: AuthService, op: CreateUserRolesCommand, call: Call) -> UserRolesWritten:
    store = svc.store
    async with store.transaction():
        await _check_roles_exist(svc, op.role_name)
        held = set(await store.roles_of(op.user_id))
        dup = [r for r in op.role_name if r in held]
        if dup:
            raise AlreadyExistsError(
                "user_role",
                op.user_id,
                f"User '{op.user_id}' already holds {', '.join(repr(d) for d in dup)}; use update_user_roles "
                "(PUT /user-roles) to replace the list.",
                details={"field": "role_name", "value": dup[0]},
            )
        await store.add_user_roles(op.user_id, op.role_name, ts(now()))
        await bump(svc, call, assignments_only=True)
        roles = await store.roles_of(op.user_id)
    return UserRolesWritten(
        user_id=op.user_id, operation="create", role_name=roles, message=f"Roles assigned to '{op.user_id}'."
    )


async def _readable(svc: AuthService, principal: Principal, user_id: str, roles: list[str]) -> list[str]:
    """The roles of `user_id`'s assignments the caller may read: the only ones a write of the set touches or
    shows (an assignment it may not read is as good as missing to it). Decided before the write's
    transaction: an assignment added meanwhile is not among them, so it is left alone."""
    return await svc.filter_allowed(principal, "userRole", roles, lambda r: {"userId": user_id, "roleName": r}, "GET")


@handlers.on(UpdateUserRolesCommand)
async def update_user_roles(svc: AuthService, op: UpdateUserRolesCommand, call: Call) -> UserRolesWritten:
    principal = call.principal
    store = svc.store
    readable = await _readable(svc, principal, op.user_id, await store.roles_of(op.user_id))
    async with store.transaction():
        await _check_roles_exist(svc, op.role_name)
        held = await store.roles_of(op.user_id)
        await store.delete_user_roles(op.user_id, [r for r in readable if r not in op.role_name])
        await store.add_user_roles(op.user_id, [r for r in op.role_name if r not in held], ts(now()))
        await bump(svc, call, assignments_only=True)
        kept = set(readable) | set(op.role_name)
        roles = [r for r in await store.roles_of(op.user_id) if r in kept]
    return UserRolesWritten(
        user_id=op.user_id, operation="update", role_name=roles, message=f"Roles of '{op.user_id}' replaced."
    )


@handlers.on(DeleteUserRolesCommand)
async def delete_user_roles(svc: AuthService, op: DeleteUserRolesCommand, call: Call) -> UserRolesWritten:
    principal = call.principal
    store = svc.store
    readable = await _readable(svc, principal, op.user_id, await store.roles_of(op.user_id))
    async with store.transaction():
        if not readable or not await store.delete_user_roles(op.user_id, readable):
            raise NotFoundError("user_role", op.user_id, f"User '{op.user_id}' has no role assignments.")
        await bump(svc, call, assignments_only=True)
    return UserRolesWritten(user_id=op.user_id, operation="delete", message=f"All roles of '{op.user_id}' removed.")
