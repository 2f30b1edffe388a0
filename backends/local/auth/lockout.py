"""No lock-out: a policy change that leaves no user able to administer roles and user roles is refused.

An *administrator* here is a user holding a role assignment who, in some session they can actually
open, may: call the routes of the operations the catalog marks `Policy.lockout_probe` (`GET`, `POST`, `PUT`
on `/roles` and `GET`, `POST`, `PUT`, `DELETE` on `/user-roles`: listing and writing roles and assignments;
tier 1), and use `GET`, `POST`, `PUT` on the role `admin` and `GET`, `POST`, `PUT`, `DELETE` on their
own assignment of `admin` (tier 2). That is what it takes to give the administrator role back to
someone. A session can be MFA only for a managed-pool user with MFA enabled, or any user of an
external IdP (whose tokens may carry MFA); API keys and in-process calls never are.

Every write to constraints, roles or user roles (`Policy.writes_policy`) bumps the policy version inside its
transaction and then calls `check` explicitly (`handlers/_common.bump`; a federated sign-in's role mapping
likewise), which re-reads the would-be policy in that
same transaction and raises 409 when the change removes the last administrator. A store that had no
administrator before the change (the auth service records that when it authorizes the write) is not
blocked: any change may be the repair. The operator who holds the store recovers with
`pluginsdk auth break-glass --user ID` (`break_glass.py`).
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Final

from pluginsdk.errors import StateConflictError
from pluginsdk.principal import Principal

from ..policy import CompiledPolicy, compile_policy
from .defaults import ADMIN_ROLE

if TYPE_CHECKING:
    from .config import AuthConfig
    from .service import Rules
    from .store import AuthStore

__all__ = ["LockoutGuard", "administers", "find_administrator", "route_probes"]


@functools.cache
def route_probes() -> tuple[tuple[str, str], ...]:
    """(method, route) of every operation the catalog marks `Policy.lockout_probe`, read once."""
    from pluginsdk.operations import CATALOG

    found = {(spec.method, spec.route) for spec in CATALOG.values() if spec.policy.lockout_probe and spec.route}
    return tuple(sorted((method, str(route)) for method, route in found))


class _Everyone:
    """`user in EVERYONE` is always true (external IdP: any user may present an MFA token)."""

    def __contains__(self, item: object) -> bool:
        return True


EVERYONE: Final = _Everyone()


def administers(policy: CompiledPolicy, principal: Principal) -> bool:
    """Whether this principal may give the administrator role back to someone (see the module docstring)."""
    for method, path in route_probes():
        if not policy.route_allowed(principal, path, method):
            return False
    for method in ("GET", "POST", "PUT"):
        if not policy.is_allowed(principal, "role", {"roleName": ADMIN_ROLE}, method):
            return False
    own = {"userId": principal.user_id, "roleName": ADMIN_ROLE}
    return all(policy.is_allowed(principal, "userRole", own, m) for m in ("GET", "POST", "PUT", "DELETE"))


def find_administrator(
    policy: CompiledPolicy,
    existing_roles: Collection[str],
    assignments: Mapping[str, list[str]],
    mfa_capable: Collection[str] | _Everyone,
    default_role: str | None,
) -> str | None:
    """The first administrator among the users holding assignments, or None. Holders of `admin` are tried
    first, so the usual answer costs one user."""
    users = sorted(assignments, key=lambda u: (ADMIN_ROLE not in assignments[u], u))
    for user in users:
        roles = tuple(r for r in assignments[user] if r in existing_roles)
        if not roles and default_role and default_role in existing_roles:
            roles = (default_role,)
        for mfa in (False, True) if user in mfa_capable else (False,):
            if administers(policy, Principal(user_id=user, roles=roles, mfa=mfa)):
                return user
    return None


class LockoutGuard:
    """Refuse a policy change that removes the last administrator (`check`, called by every policy write)."""

    def __init__(
        self,
        store: AuthStore,
        config: AuthConfig,
        *,
        rules: Callable[[], Awaitable[tuple[int, Rules]]] | None = None,
    ) -> None:
        """`rules`: the compiled rules as read in the current transaction (the auth service's, which reuses
        its compiled policy when only assignments changed); default: compile what is stored."""
        self.store = store
        self.config = config
        self._rules = rules

    async def mfa_capable(self) -> Collection[str] | _Everyone:
        if self.config.mode == "external":
            return EVERYONE
        if self.config.mode == "managed":
            return await self.store.mfa_user_ids()
        return ()

    async def assignments(self) -> dict[str, list[str]]:
        by_user: dict[str, list[str]] = defaultdict(list)
        for r in await self.store.user_role_rows():
            by_user[r["user_id"]].append(r["role_name"])
        return dict(by_user)

    async def administrator(
        self, policy: CompiledPolicy | None = None, roles: Mapping[str, bool] | None = None
    ) -> str | None:
        """An administrator under the stored policy (or the given compiled one), read in the current transaction."""
        if policy is None or roles is None:
            policy, roles = await self._compiled()
        return find_administrator(
            policy, roles, await self.assignments(), await self.mfa_capable(), self.config.default_user_role_name
        )

    async def _compiled(self) -> tuple[CompiledPolicy, Mapping[str, bool]]:
        if self._rules is not None:
            _, rules = await self._rules()
            return rules.policy, rules.roles
        role_rows = await self.store.list_roles()
        roles = {r["role_name"]: bool(r["mfa_required"]) for r in role_rows}
        rows = await self.store.all_constraints()
        return compile_policy([json.loads(r["data"]) for r in rows], roles), roles

    async def check(self, had_administrator: bool | None = None) -> None:
        """Refuse (409) a change after which no one could administer roles. `had_administrator`: whether
        someone could before it, as the authorizer found (`Call.had_administrator`); None: unknown, checked."""
        if had_administrator is False:
            return  # nobody could administer before this change: it may be the repair
        if await self.administrator() is None:
            raise StateConflictError(
                "Refused: after this change no user could administer roles and user roles (the last "
                f"assignment of '{ADMIN_ROLE}' removed, '{ADMIN_ROLE}' made MFA-only while no administrator can "
                "sign in with MFA, or the constraints granting it removed or denied). Grant the administrator "
                "role to another user first; an operator with access to the store can recover by break-glass (the "
                "administrator role re-granted directly in the store).",
                details={"field": "policy", "value": None, "expected": "at least one user who can administer roles"},
            )
