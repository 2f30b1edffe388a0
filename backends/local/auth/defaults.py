"""Default roles and constraints, created once when a store is first opened.

`admin` may do everything; `basicReadOnly` may read data objects and the
`/api/v1` read routes except the effective configuration (`/api/v1/config`:
administrators only), check its routes, read and write its login profile,
read `/secure-config`, and manage its own session and keys under
`/auth/user/`. The configured admin user (default `administrator`) holds
`admin`; each newly configured admin user id receives it once.
"""

from __future__ import annotations

import json
from typing import Any

from pluginsdk.models.auth_vocabulary import OBJECT_TYPES

from .crypto import now, ts
from .store import AuthStore

__all__ = ["ADMIN_ROLE", "READ_ONLY_ROLE", "default_constraints", "seed"]

ADMIN_ROLE = "admin"
READ_ONLY_ROLE = "basicReadOnly"
ALL_METHODS = ("GET", "PUT", "POST", "DELETE")

ADMIN_ONLY = ("role", "userRole", "api", "web")
"""Object types only `admin` reaches by default; basicReadOnly may read every other (data) type."""
ADMIN_ONLY_READS = "/api/v1/config,/api/v1/config/*"
"""`/api/v1` read routes only `admin` reaches by default: the effective configuration names the store, its
files and the identity provider's endpoints, which a read-only caller has no need to know."""
DATA_TYPES: dict[str, tuple[str, ...]] = {t: f for t, f in OBJECT_TYPES.items() if t not in ADMIN_ONLY}


def _perm(role: str, methods: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"groupId": role, "permission": m, "permissionType": "allow"} for m in methods]


def _any(fields: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"field": f, "operator": "equals", "value": "*"} for f in fields]


def _routes(*paths: str) -> list[dict[str, str]]:
    return [{"field": "route__path", "operator": "equals", "value": p} for p in paths]


def default_constraints() -> list[dict[str, Any]]:
    """The default constraints in their wire (camelCase) shape."""
    out: list[dict[str, Any]] = []
    for object_type, fields in OBJECT_TYPES.items():
        out.append(
            {
                "constraintId": f"psdk-default-admin-{object_type}",
                "name": f"admin: all {object_type}",
                "description": f"Default: the admin role may use every method on every {object_type}.",
                "objectType": object_type,
                "criteriaOr": _any(fields),
                "groupPermissions": _perm(ADMIN_ROLE, ALL_METHODS),
            }
        )
    for object_type, fields in DATA_TYPES.items():
        out.append(
            {
                "constraintId": f"psdk-default-readonly-{object_type}",
                "name": f"basicReadOnly: read {object_type}",
                "description": f"Default: the basicReadOnly role may read every {object_type}.",
                "objectType": object_type,
                "criteriaOr": _any(fields),
                "groupPermissions": _perm(READ_ONLY_ROLE, ("GET",)),
            }
        )
    out += [
        {
            "constraintId": "psdk-default-readonly-api-read",
            "name": "basicReadOnly: read routes",
            "description": "Default: basicReadOnly may call the /api/v1 read routes, except the effective "
            "configuration (administrators only), and /secure-config.",
            "objectType": "api",
            "criteriaAnd": [{"field": "route__path", "operator": "is_not_one_of", "value": ADMIN_ONLY_READS}],
            "criteriaOr": _routes("/api/v1/*", "/secure-config"),
            "groupPermissions": _perm(READ_ONLY_ROLE, ("GET",)),
        },
        {
            "constraintId": "psdk-default-readonly-api-self",
            "name": "basicReadOnly: own routes and profile",
            "description": "Default: basicReadOnly may check its routes and objects and use its login profile.",
            "objectType": "api",
            "criteriaOr": _routes("/auth/routes", "/auth/routes/*", "/auth/loginProfile/*", "/auth/authorize*"),
            "groupPermissions": _perm(READ_ONLY_ROLE, ("GET", "POST")),
        },
        {
            "constraintId": "psdk-default-readonly-api-user",
            "name": "basicReadOnly: own keys and session",
            "description": "Default: basicReadOnly may manage its own API keys, password, MFA and session.",
            "objectType": "api",
            "criteriaOr": _routes("/auth/user/*"),
            "groupPermissions": _perm(READ_ONLY_ROLE, ALL_METHODS),
        },
    ]
    return out


EARLIER_DEFAULTS: dict[str, tuple[dict[str, Any], ...]] = {
    "psdk-default-readonly-api-read": (
        {
            "constraintId": "psdk-default-readonly-api-read",
            "name": "basicReadOnly: read routes",
            "description": "Default: basicReadOnly may call the /api/v1 read routes and /secure-config.",
            "objectType": "api",
            "criteriaOr": _routes("/api/v1/*", "/secure-config"),
            "groupPermissions": _perm(READ_ONLY_ROLE, ("GET",)),
        },
    ),
}
"""Earlier contents of default constraints: a store that still holds one unchanged gets the current default
(an operator's edit is kept as it is)."""
DEFAULTS_REVISION = "2"


async def _upgrade_defaults(store: AuthStore, at: str) -> bool:
    """Replace default constraints still in an earlier default content; True if any was."""
    current = {c["constraintId"]: c for c in default_constraints()}
    changed = False
    for constraint_id, earlier in EARLIER_DEFAULTS.items():
        row = await store.get_constraint(constraint_id)
        if row is not None and json.loads(row["data"]) in earlier:
            new = current[constraint_id]
            changed = await store.update_constraint(constraint_id, new["objectType"], json.dumps(new), at) or changed
    return changed


async def seed(store: AuthStore, admin_user_id: str) -> bool:
    """Create the defaults once per store and the admin assignment once per admin user id; True if anything changed."""
    changed = False
    at = ts(now())
    async with store.transaction():
        if await store.meta("auth.seeded") is None:
            for name, desc in (
                (ADMIN_ROLE, "Administrators: every method on every object type and route."),
                (READ_ONLY_ROLE, "Read-only users: read data, check routes, manage their own keys."),
            ):
                await store.seed_role(name, desc, at)
            for c in default_constraints():
                await store.seed_constraint(c["constraintId"], c["objectType"], json.dumps(c), at)
            await store.set_meta("auth.seeded", at)
            await store.set_meta("auth.defaults_revision", DEFAULTS_REVISION)
            changed = True
        if await store.meta("auth.defaults_revision") != DEFAULTS_REVISION:
            changed = await _upgrade_defaults(store, at) or changed
            await store.set_meta("auth.defaults_revision", DEFAULTS_REVISION)
        flag = f"auth.admin_seeded.{admin_user_id}"
        if await store.meta(flag) is None:
            await store.seed_user_role(admin_user_id, ADMIN_ROLE, at)
            await store.set_meta(flag, at)
            changed = True
        if changed:
            await store.bump_policy_version()
    return changed
