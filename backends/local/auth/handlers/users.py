"""Handlers: managed user-pool users (only when `app.authProvider.useManaged.enabled`).

New users and password resets get a temporary password from `secrets`,
mailed through the configured SMTP server and stored only as an argon2 hash;
the user must replace it at the next sign-in (status FORCE_CHANGE_PASSWORD).
Without a mail server the password is returned once, in the answer to the
administrator who created or reset the user (`temporary_password`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import AlreadyExistsError, NotFoundError
from pluginsdk.models.auth_results import ManagedUserList, ManagedUserWritten
from pluginsdk.operations.users import (
    CreateManagedUserCommand,
    DeleteManagedUserCommand,
    ListManagedUsersQuery,
    ResetManagedUserMfaCommand,
    ResetManagedUserPasswordCommand,
    UpdateManagedUserCommand,
)

from ...registry import HandlerTable
from ..crypto import now, temporary_password, ts
from ..service import AuthService
from ._common import clear_mfa, user_from_row

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)

FORCE_CHANGE = "FORCE_CHANGE_PASSWORD"
CONFIRMED = "CONFIRMED"


def _mail_body(svc: AuthService, user_id: str, password: str, reason: str) -> str:
    days = svc.config.managed.temporaryPasswordDays
    return (
        f"{reason}\n\nUser name: {user_id}\nTemporary password: {password}\n\n"
        f"The temporary password expires in {days} days. You will choose a new password when you sign in.\n"
    )


async def _temporary(svc: AuthService, user_id: str, email: str, reason: str) -> tuple[dict[str, Any], str | None]:
    """Make, mail and hash a temporary password: (the columns to store, the password when no mail server
    is configured — the caller shows it once to the administrator, never stores or logs it)."""
    password = temporary_password()
    if svc.mailer.configured:
        await svc.mailer.send(email, "Your temporary password", _mail_body(svc, user_id, password, reason))
    expires = now() + timedelta(days=svc.config.managed.temporaryPasswordDays)
    columns = {
        "password_hash": await svc.passwords.ahash(password),
        "password_expires_at": ts(expires),
        "status": FORCE_CHANGE,
    }
    return columns, None if svc.mailer.configured else password


_SHOWN_ONCE = (
    "no mail server is configured (app.authProvider.smtp), so the temporary password is in this answer, "
    "shown this once: hand it to the user over a trusted channel; it must be changed at the first sign-in."
)


@handlers.on(ListManagedUsersQuery)
async def list_managed_users(svc: AuthService, op: ListManagedUsersQuery, call: Call) -> ManagedUserList:
    svc.require_managed()
    size = op.page_size or op.max_items
    pos = svc.decode_page("users", op.starting_token)
    after = str(pos.get("u", "")) if pos is not None else None
    rows = await svc.store.page_users(after, size + 1)
    more = len(rows) > size
    rows = rows[:size]
    users = [user_from_row(r) for r in rows]
    token = svc.encode_page("users", {"u": rows[-1]["user_id"]}) if more else None
    return ManagedUserList(users=users, next_token=token)


@handlers.on(CreateManagedUserCommand)
async def create_managed_user(svc: AuthService, op: CreateManagedUserCommand, call: Call) -> ManagedUserWritten:
    svc.require_managed()
    if await svc.store.get_user(op.user_id) is not None:
        raise AlreadyExistsError("user", op.user_id, f"User '{op.user_id}' already exists.")
    at = ts(now())
    row: dict[str, Any] = {
        "user_id": op.user_id,
        "email": op.email,
        "phone": op.phone,
        "status": FORCE_CHANGE,
        "enabled": 1,
        "mfa_enabled": 0,
        "created_at": at,
        "updated_at": at,
    }
    columns, shown = await _temporary(svc, op.user_id, op.email, "An account was created for you.")
    row.update(columns)
    if shown is None:
        message = f"User '{op.user_id}' created; a temporary password was sent to their email address."
    else:
        message = f"User '{op.user_id}' created; {_SHOWN_ONCE}"
    async with svc.store.transaction():
        await svc.store.insert_user(row)
        stored = await svc.store.get_user(op.user_id)
    assert stored is not None
    return ManagedUserWritten(
        user_id=op.user_id, operation="create", user=user_from_row(stored), message=message, temporary_password=shown
    )


@handlers.on(UpdateManagedUserCommand)
async def update_managed_user(svc: AuthService, op: UpdateManagedUserCommand, call: Call) -> ManagedUserWritten:
    svc.require_managed()
    changes: dict[str, Any] = {"updated_at": ts(now())}
    if op.email is not None:
        changes["email"] = op.email
    if op.phone is not None:
        changes["phone"] = op.phone
    if op.clear_phone:
        changes["phone"] = None
    async with svc.store.transaction():
        if not await svc.store.update_user(op.user_id, changes):
            raise NotFoundError("user", op.user_id, f"User '{op.user_id}' not found.")
        stored = await svc.store.get_user(op.user_id)
    assert stored is not None
    return ManagedUserWritten(
        user_id=op.user_id, operation="update", user=user_from_row(stored), message=f"User '{op.user_id}' updated."
    )


@handlers.on(DeleteManagedUserCommand)
async def delete_managed_user(svc: AuthService, op: DeleteManagedUserCommand, call: Call) -> ManagedUserWritten:
    svc.require_managed()
    async with svc.store.transaction():
        if not await svc.store.delete_user(op.user_id):
            raise NotFoundError("user", op.user_id, f"User '{op.user_id}' not found.")
    return ManagedUserWritten(
        user_id=op.user_id,
        operation="delete",
        message=f"User '{op.user_id}' deleted; their API keys and sessions are revoked.",
    )


@handlers.on(ResetManagedUserPasswordCommand)
async def reset_managed_user_password(
    svc: AuthService, op: ResetManagedUserPasswordCommand, call: Call
) -> ManagedUserWritten:
    svc.require_managed()
    user = await svc.store.get_user(op.user_id)
    if user is None:
        raise NotFoundError("user", op.user_id, f"User '{op.user_id}' not found.")
    changes, shown = await _temporary(svc, op.user_id, user["email"], "Your password was reset by an administrator.")
    changes["updated_at"] = ts(now())
    async with svc.store.transaction():
        await svc.store.update_user(op.user_id, changes)
        await svc.store.revoke_sessions(op.user_id)
    return ManagedUserWritten(
        user_id=op.user_id,
        operation="resetPassword",
        message="A new temporary password was sent to the user's email address."
        if shown is None
        else f"Password reset; {_SHOWN_ONCE}",
        temporary_password=shown,
    )


@handlers.on(ResetManagedUserMfaCommand)
async def reset_managed_user_mfa(svc: AuthService, op: ResetManagedUserMfaCommand, call: Call) -> ManagedUserWritten:
    """An administrator's reset for a lost authenticator (audited like every managed-user change)."""
    svc.require_managed()
    async with svc.store.transaction():
        if not await clear_mfa(svc, op.user_id):
            raise NotFoundError("user", op.user_id, f"User '{op.user_id}' not found.")
        stored = await svc.store.get_user(op.user_id)
    assert stored is not None
    return ManagedUserWritten(
        user_id=op.user_id,
        operation="resetMfa",
        user=user_from_row(stored),
        message=f"MFA cleared for '{op.user_id}': they sign in with their password and may set up MFA again.",
    )
