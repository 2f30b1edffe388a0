"""Break-glass recovery: give the administrator role back to a user, directly in the store.

For the operator who holds the store (its SQLite file, or credentials of its PostgreSQL database) when no
one can administer roles any more. It is deliberately not an operation of the catalog: nothing reachable
over the network can run it, and it bypasses authorization and the lock-out guard. In one transaction it

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
from typing import Any

from pluginsdk.config import Settings
from pluginsdk.errors import ValidationError
from pluginsdk.principal import Principal

from .defaults import ADMIN_ROLE, default_constraints
from .store import AuthStore

__all__ = ["break_glass"]

log = logging.getLogger("pluginsdk.auth")

_USER_ID = re.compile(r"^[\w\-.+@]{3,256}$")


async def break_glass(settings: Settings, user_id: str) -> dict[str, Any]:
    """Re-grant `admin` to `user_id` in the configured store; returns what was done."""
    if not _USER_ID.fullmatch(user_id):
        raise ValidationError(
            f"Invalid user id {user_id[:64]!r}.",
            details={"field": "user", "value": user_id[:64], "expected": r"^[\w\-.+@]{3,256}$"},
        )
    from ..engine import Engine
    from . import start_auth
    from .audit import operator
    from .crypto import now, ts
    from .lockout import administers

    engine = Engine(settings)
    await engine.start()
    try:
        # authorization disabled in this configuration: the store is repaired all the same
        svc = engine.auth or await start_auth(engine)
        store = svc.store
        at = ts(now())
        restored: list[str] = []
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
            for c in default_constraints():
                if not c["constraintId"].startswith("psdk-default-admin-"):
                    continue
                data = json.dumps(c)
                row = await store.get_constraint(c["constraintId"])
                if row is None:
                    await store.insert_constraints([{"id": c["constraintId"], "type": c["objectType"], "data": data,
                                                     "at": at}])  # fmt: skip
                elif json.loads(row["data"]) != c:
                    await store.update_constraint(c["constraintId"], c["objectType"], data, at)
                else:
                    continue
                restored.append(c["constraintId"])
            held = sorted(await store.roles_of(user_id))
            assigned = ADMIN_ROLE not in held
            if assigned:
                await store.add_user_roles(user_id, [ADMIN_ROLE], at)
            # the repair bypasses the lock-out guard: it writes through the store directly, and the guard runs
            # only where a handler's write calls it (handlers/_common.bump); authorization is bypassed the same
            # way (no Call, no authorizer: the operator holds the store)
            await store.bump_policy_version()
            await store.append_audit(
                actor=operator(),
                action="break_glass",
                target=("userRole", user_id),
                before=held or None,
                after={
                    "roles": sorted(await store.roles_of(user_id)),
                    "roleCreated": created,
                    "mfaRequirementCleared": mfa_cleared,
                    "constraintsRestored": restored,
                },
            )
        snap = await svc.snapshot()
        principal = await svc.with_roles(Principal(user_id=user_id), snap)
        ok = administers(snap.policy, principal)
        denies = [] if ok else await _denies(svc.store, user_id)
        log.warning("break-glass: role %r granted to %r directly in the store", ADMIN_ROLE, user_id)
        return {
            "userId": user_id,
            "roleCreated": created,
            "mfaRequirementCleared": mfa_cleared,
            "constraintsRestored": restored,
            "assigned": assigned,
            "canAdminister": ok,
            "denyConstraints": denies,
            "message": (
                f"'{user_id}' holds '{ADMIN_ROLE}' and can administer roles and user roles."
                if ok
                else f"'{user_id}' holds '{ADMIN_ROLE}', but deny constraints still keep it from administering "
                f"roles: {', '.join(denies) or '(none found naming the role or user)'}; delete them and run "
                "break-glass again."
            ),
        }
    finally:
        await engine.aclose()


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
