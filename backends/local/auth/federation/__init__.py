"""Federated sign-in, whichever the protocol: sign-ins begun at the identity provider, who is admitted, their
user record and roles, and the managed-pool session they get.

A sign-in begun (`begin`) is kept in the store, sealed, under the SHA-256 of its random `state`, for ten
minutes and for one use (`resume`), so every server process on the store can finish it. A federated user
is created on first sign-in and remembers the issuer that made it (`federated_by`): a user of the pool
the provider did not create (a password user, another provider's) is never signed in by it. At each
sign-in the user's roles become those `federation.roleMapping` gives their groups (when it maps any). Nor
is a new federated user made under an id already in use here (the administrator's, or one holding roles or
API keys).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from pluginsdk.errors import AuthenticationError, PermissionDeniedError, TooManyRequestsError
from pluginsdk.models.identifiers import identifier_problem

from ..audit import user_change
from ..crypto import now, sha256_hex, ts

if TYPE_CHECKING:
    from ...store.db import Row
    from ..service import AuthService

__all__ = ["PENDING_SECONDS", "Identity", "admit", "begin", "groups_of", "new_state", "resume"]

PENDING_SECONDS = 600.0
"""How long a begun sign-in may take at the provider."""
_PENDING_LIMIT = 10_000
"""Begun sign-ins kept at once; more are refused (429) until some finish or expire."""
_FEDERATED = "FEDERATED"
"""The status of a user the provider signs in (no password here)."""


class Identity(NamedTuple):
    """Who the provider says signed in."""

    issuer: str
    user_id: str
    email: str | None
    groups: tuple[str, ...]
    mfa: bool


def new_state() -> str:
    return secrets.token_urlsafe(32)


async def begin(svc: AuthService, data: dict[str, Any], state: str | None = None) -> str:
    """Keep `data` (nonce, PKCE verifier, redirect URI or request id) for `state` (default: a new one), which
    is returned."""
    state = state or new_state()
    key = sha256_hex(state)
    sealed = svc.box.seal(json.dumps(data), f"federation:{key}")
    if not await svc.store.insert_pending_sign_in(key, sealed, time.time() + PENDING_SECONDS, _PENDING_LIMIT):
        raise TooManyRequestsError("Too many sign-ins are under way; try again in a few minutes.")
    return state


async def resume(svc: AuthService, state: str) -> dict[str, Any]:
    """The data `begin` kept for `state`, taken (a state is good once); AuthenticationError when there is none."""
    key = sha256_hex(state)
    sealed = await svc.store.take_pending_sign_in(key)
    if sealed is None:
        raise AuthenticationError("This sign-in is unknown, used or expired; start it again.")
    data: dict[str, Any] = json.loads(svc.box.open(sealed, f"federation:{key}"))
    return data


def groups_of(value: Any) -> tuple[str, ...]:
    """A groups claim or attribute as text values (a list, or one value)."""
    values = value if isinstance(value, list | tuple) else [value] if value is not None else []
    return tuple(str(v) for v in values if isinstance(v, str | int) and str(v))


def _check_admitted(svc: AuthService, who: Identity) -> None:
    fed = svc.config.provider.federation
    refused = PermissionDeniedError("This identity provider account may not sign in here.", details={"field": "issuer"})
    if fed.allowedIssuers and who.issuer not in fed.allowedIssuers:
        raise refused
    if fed.allowedEmailDomains:
        domain = (who.email or "").rpartition("@")[2].lower()
        if not who.email or domain not in {d.lower().lstrip("@") for d in fed.allowedEmailDomains}:
            raise PermissionDeniedError(
                "This identity provider account may not sign in here: its e-mail domain is not allowed.",
                details={"field": "email"},
            )
    problem = identifier_problem("user id", who.user_id)
    if problem is not None:
        raise PermissionDeniedError(
            f"The identity provider's user id cannot be a user id here: {problem}.", details={"field": "user_id"}
        )


async def _check_unused(svc: AuthService, user_id: str) -> None:
    """A new federated user may not take over an id in use here: the administrator's, or one holding roles or
    API keys (the provider would inherit what was given to someone else)."""
    store = svc.store
    if (
        user_id == svc.config.admin_user_id
        or await store.roles_of(user_id)
        or await store.page_api_keys(user_id, None, 1)
    ):
        raise PermissionDeniedError(
            f"'{user_id}' is in use here (roles, API keys or the administrator); the identity provider cannot "
            "sign in as it.",
            details={"field": "user_id", "value": user_id},
        )


async def _user(svc: AuthService, who: Identity) -> Row:
    """The user record of `who`, made on first sign-in (just in time), its e-mail kept current."""
    store = svc.store
    user = await store.get_user(who.user_id)
    at = ts(now())
    if user is None:
        await _check_unused(svc, who.user_id)
        await store.insert_user(
            {
                "user_id": who.user_id,
                "email": who.email or "",
                "status": _FEDERATED,
                "enabled": 1,
                "mfa_enabled": 0,
                "federated_by": who.issuer,
                "created_at": at,
                "updated_at": at,
            }
        )
        await user_change(store, who.user_id, "federated_sign_up", who.user_id, None)
    elif user["federated_by"] != who.issuer or not user["enabled"]:
        raise PermissionDeniedError(
            f"'{who.user_id}' is a user of this pool that this identity provider does not sign in (or is disabled).",
            details={"field": "user_id", "value": who.user_id},
        )
    elif who.email and user["email"] != who.email:
        await store.update_user(who.user_id, {"email": who.email, "updated_at": at})
        await user_change(store, who.user_id, "federated_update", who.user_id, user)
    found = await store.get_user(who.user_id)
    assert found is not None
    return found


async def _roles(svc: AuthService, who: Identity) -> None:
    """Set the user's roles from their groups, when `roleMapping` maps any group (only a change is written)."""
    mapping = svc.config.provider.federation.roleMapping
    if not mapping:
        return
    store = svc.store
    wanted = sorted({role for group in who.groups for role in mapping.get(group, ())})
    held = await store.roles_of(who.user_id)
    if wanted == sorted(held):
        return
    await store.delete_user_roles(who.user_id, [r for r in held if r not in wanted])
    await store.add_user_roles(who.user_id, [r for r in wanted if r not in held], ts(now()))
    revision = await store.bump_policy_version(assignments_only=True)
    await svc.guard.check()  # the lock-out guard, as for any policy write (who could before: unknown, checked)
    await store.append_audit(
        actor=who.user_id,
        action="federated_roles",
        target=("userRoles", who.user_id),
        before={"roleName": held},
        after={"roleName": wanted},
        revision=revision,
    )


async def admit(svc: AuthService, who: Identity) -> Row:
    """The user `who` signs in as, checked against the allow-lists, made or updated, roles set (one
    transaction); PermissionDeniedError when they may not sign in."""
    _check_admitted(svc, who)
    async with svc.store.transaction():
        user = await _user(svc, who)
        await _roles(svc, who)
    return user
