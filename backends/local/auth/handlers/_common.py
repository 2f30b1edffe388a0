"""Helpers shared by the auth handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pluginsdk.models.auth_results import ApiKey, ManagedUser, Role

from ..crypto import now, parse_ts, ts
from ..service import AuthService

if TYPE_CHECKING:
    from ...call import Call

__all__ = ["api_key_from_row", "bump", "clear_mfa", "role_from_row", "user_from_row"]


async def bump(svc: AuthService, call: Call, *, assignments_only: bool = False) -> int:
    """Start the policy version `call`'s write makes (`AuthStore.bump_policy_version`), then run the lock-out
    guard on the store as written, both in the caller's transaction (a refusal rolls the write back); the
    guard decides with what authorization found before the write (`call.had_administrator`). The revision is
    recorded on `call` (the audit record's)."""
    call.revision = await svc.store.bump_policy_version(assignments_only=assignments_only)
    await svc.guard.check(call.had_administrator)
    return call.revision


def role_from_row(r: Any) -> Role:
    return Role(
        id=r["id"],
        role_name=r["role_name"],
        description=r["description"],
        created_on=parse_ts(r["created_on"]),
        source=r["source"],
        source_identifier=r["source_identifier"],
        mfa_required=bool(r["mfa_required"]),
    )


def api_key_from_row(r: Any) -> ApiKey:
    return ApiKey(
        api_key_id=r["api_key_id"],
        api_key_name=r["api_key_name"],
        description=r["description"],
        user_id=r["user_id"],
        created_by=r["created_by"],
        created_at=parse_ts(r["created_at"]),
        updated_at=parse_ts(r["updated_at"]),
        expires_at=parse_ts(r["expires_at"]) if r["expires_at"] else None,
        is_active="true" if r["is_active"] else "false",
    )


def user_from_row(r: Any) -> ManagedUser:
    return ManagedUser(
        user_id=r["user_id"],
        email=r["email"],
        phone=r["phone"],
        user_status=r["status"],
        enabled=bool(r["enabled"]),
        user_create_date=parse_ts(r["created_at"]),
        user_last_modified_date=parse_ts(r["updated_at"]),
        mfa_enabled=bool(r["mfa_enabled"]),
    )


async def clear_mfa(svc: AuthService, user_id: str) -> bool:
    """Turn the user's MFA off (`AuthStore.clear_mfa`) in the caller's transaction; False when there is no such
    user. Refused (409, the lock-out guard) when it leaves no one able to administer roles while someone could:
    the last administrator able to sign in with MFA, when the administrator role needs MFA."""
    could = await svc.guard.administrator() is not None
    if not await svc.store.clear_mfa(user_id, ts(now())):
        return False
    if could:
        await svc.guard.check()
    return True
