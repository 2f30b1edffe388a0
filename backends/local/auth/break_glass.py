"""Break-glass recovery: give the administrator role back to a user, directly in the store.

For the operator who holds the store (its SQLite file, or credentials of its PostgreSQL database) when no
one can administer roles any more. It is deliberately not an operation of the catalog: nothing reachable
over the network can run it, and it bypasses authorization and the lock-out guard (`BYPASSES` says so in the
report). `LocalBackend.break_glass` starts the engine and hands over its auth service. In one transaction it

1. creates the role `admin` if it is gone, and clears its `mfaRequired`;
2. restores the default constraints that grant `admin` everything (`psdk-default-admin-*`) to their
   default content;
3. assigns `admin` to the user;

then bumps the policy version (every process sees it on its next decision), appends a record to the audit
log (action `break_glass`, actor `operator:<OS login>`, the user's roles before and after, what was
restored) in the same transaction, and reports whether the user can now administer roles and user roles
(a deny constraint naming `admin` still wins; the report says so).
CLI: `pluginsdk auth break-glass --user ID`.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import TYPE_CHECKING, Any, Final

from pluginsdk.errors import ValidationError
from pluginsdk.principal import Principal

from .audit import operator
from .crypto import now, ts
from .defaults import ADMIN_ROLE, default_constraints
from .lockout import administers
from .store import AuthStore

if TYPE_CHECKING:
    from .service import AuthService

__all__ = ["BYPASSES", "break_glass", "check_user_id"]

log = logging.getLogger("pluginsdk.auth")

_USER_ID = re.compile(r"^[\w\-.+@]{3,256}$")


BYPASSES: Final = (
    "authorization: no Call is made and no authorizer decides; holding the store is the credential",
    "the lock-out guard: the writes go to the auth store directly, and the guard runs only where an "
    "operation that writes policy (Policy.writes_policy) calls it",
    "the catalog and the network: it is no operation, so no server, MCP tool or remote client can run it",
)
"""What the repair goes around, in the report and the log so an operator reading either sees it."""


def check_user_id(user_id: str) -> None:
    """Refuse a user id no store holds, before anything is opened."""
    if not _USER_ID.fullmatch(user_id):
        raise ValidationError(
            f"Invalid user id {user_id[:64]!r}.",
            details={"field": "user", "value": user_id[:64], "expected": r"^[\w\-.+@]{3,256}$"},
        )


async def break_glass(auth: AuthService, user_id: str) -> dict[str, Any]:
    """Re-grant `admin` to `user_id` in the store of the started auth service `auth`; returns what was done.

    The caller (`LocalBackend.break_glass`) starts the engine and hands over its auth service: the repair needs
    the auth store and the policy snapshot, nothing else of the engine.
    """
    check_user_id(user_id)
    done = await _repair(auth.store, user_id)
    snap = await auth.snapshot()
    principal = await auth.with_roles(Principal(user_id=user_id), snap)
    ok = administers(snap.policy, principal)
    denies = [] if ok else await _denies(auth.store, user_id)
    log.warning(
        "break-glass: role %r granted to %r directly in the store, bypassing %s",
        ADMIN_ROLE,
        user_id,
        "; ".join(BYPASSES),
    )
    return {
        "userId": user_id,
        **done,
        "canAdminister": ok,
        "denyConstraints": denies,
        "bypassed": list(BYPASSES),
        "message": (
            f"'{user_id}' holds '{ADMIN_ROLE}' and can administer roles and user roles."
            if ok
            else f"'{user_id}' holds '{ADMIN_ROLE}', but deny constraints still keep it from administering "
            f"roles: {', '.join(denies) or '(none found naming the role or user)'}; delete them and run "
            "break-glass again."
        ),
    }


async def _repair(store: AuthStore, user_id: str) -> dict[str, Any]:
    """The writes, the policy version bump and the audit record, in one transaction."""
    at = ts(now())
    async with store.transaction():
        role = await store.get_role(ADMIN_ROLE)
        created = role is None
        if created:
            await store.insert_role(
                {
                    "role_name": ADMIN_ROLE,
                    "id": str(uuid.uuid4()),
                    "description": "Administrators: every method on every object type and route.",
                    "source": "INTERNAL_SYSTEM",
                    "source_identifier": None,
                    "mfa_required": 0,
                    "created_on": at,
                }
            )
        mfa_cleared = bool(role is not None and role["mfa_required"])
        if mfa_cleared:
            await store.update_role(ADMIN_ROLE, {"mfa_required": 0})
        restored = await _restore_admin_constraints(store, at)
        held = sorted(await store.roles_of(user_id))
        assigned = ADMIN_ROLE not in held
        if assigned:
            await store.add_user_roles(user_id, [ADMIN_ROLE], at)
        await store.bump_policy_version()
        after = {"roleCreated": created, "mfaRequirementCleared": mfa_cleared, "constraintsRestored": restored}
        await store.append_audit(
            actor=operator(),
            action="break_glass",
            target=("userRole", user_id),
            before=held or None,
            after={"roles": sorted(await store.roles_of(user_id)), **after},
        )
    return {**after, "assigned": assigned}


async def _restore_admin_constraints(store: AuthStore, at: str) -> list[str]:
    """Put the default constraints granting `admin` back to their default content; the ids it changed."""
    restored = []
    for c in default_constraints():
        if not c["constraintId"].startswith("psdk-default-admin-"):
            continue
        data = json.dumps(c)
        row = await store.get_constraint(c["constraintId"])
        if row is None:
            await store.insert_constraints([{"id": c["constraintId"], "type": c["objectType"], "data": data, "at": at}])
        elif json.loads(row["data"]) != c:
            await store.update_constraint(c["constraintId"], c["objectType"], data, at)
        else:
            continue
        restored.append(c["constraintId"])
    return restored


async def _denies(store: AuthStore, user_id: str) -> list[str]:
    """Ids of the constraints with a deny for `admin` or for the user (what can still stand in the way)."""
    out = []
    for row in await store.all_constraints():
        data = json.loads(row["data"])
        for p in data.get("groupPermissions") or ():
            if p.get("groupId") == ADMIN_ROLE and str(p.get("permissionType", "")).lower() == "deny":
                out.append(row["constraint_id"])
                break
        else:
            for p in data.get("userPermissions") or ():
                if p.get("userId") == user_id and str(p.get("permissionType", "")).lower() == "deny":
                    out.append(row["constraint_id"])
                    break
    return out
