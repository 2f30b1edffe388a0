"""Small builders for policy tests: constraints as wire dicts, both evaluators side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from backends.local.policy import CompiledPolicy
from pluginsdk.principal import Principal
from tests.support.reference_policy import ReferencePolicy

_counter = 0


def crit(field: str, operator: str, value: str) -> dict[str, str]:
    return {"field": field, "operator": operator, "value": value}


def constraint(
    object_type: str,
    *,
    and_: Sequence[dict[str, str]] = (),
    or_: Sequence[dict[str, str]] = (),
    allow: Mapping[str, str] | None = None,
    deny: Mapping[str, str] | None = None,
    user_allow: Mapping[str, str] | None = None,
    user_deny: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A constraint dict; allow/deny map a role (or user) to a space-separated list of methods."""
    global _counter
    _counter += 1
    group = [
        {"groupId": who, "permission": m, "permissionType": kind}
        for kind, table in (("allow", allow), ("deny", deny))
        for who, methods in (table or {}).items()
        for m in methods.split()
    ]
    users = [
        {"userId": who, "permission": m, "permissionType": kind}
        for kind, table in (("allow", user_allow), ("deny", user_deny))
        for who, methods in (table or {}).items()
        for m in methods.split()
    ]
    return {
        "constraintId": f"c{_counter}",
        "name": f"constraint {_counter}",
        "description": "test constraint",
        "objectType": object_type,
        "criteriaAnd": list(and_),
        "criteriaOr": list(or_),
        "groupPermissions": group,
        "userPermissions": users,
    }


def who(*roles: str, user: str = "alice", mfa: bool = False) -> Principal:
    return Principal(user_id=user, roles=tuple(roles), mfa=mfa)


class Both:
    """The compiled evaluator and the reference, asserting they agree on every decision."""

    def __init__(
        self,
        constraints: Sequence[Mapping[str, Any]],
        roles: Mapping[str, bool] | None = None,
        *,
        default_user_role_name: str | None = None,
    ) -> None:
        self.compiled = CompiledPolicy(constraints, roles, default_user_role_name=default_user_role_name)
        self.reference = ReferencePolicy(constraints, roles, default_user_role_name=default_user_role_name)

    def allowed(self, principal: Principal, object_type: str, attrs: Mapping[str, Any], method: str = "GET") -> bool:
        got = self.compiled.is_allowed(principal, object_type, attrs, method)
        want = self.reference.is_allowed(principal, object_type, attrs, method)
        assert got == want, f"compiled={got} reference={want} for {principal} {object_type} {attrs} {method}"
        return got

    def route(self, principal: Principal, path: str, method: str = "GET") -> bool:
        got = self.compiled.route_allowed(principal, path, method)
        assert got == self.reference.route_allowed(principal, path, method)
        return got
