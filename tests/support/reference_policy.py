"""The policy rules stated as plainly as possible, for tests to compare the compiled evaluator against.

No indexes, no caches, no shared code with `backends/local/policy/matching.py`: every decision scans every
constraint, and wildcard matching is a textbook dynamic programme over characters. Slow on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from backends.local.policy import ConstraintSource, read_constraint
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES
from pluginsdk.principal import Principal

__all__ = ["ReferencePolicy", "constraint_matches", "wildcard_match"]

_M = TypeVar("_M", bound=Mapping[str, Any])


def wildcard_match(pattern: str, text: str) -> bool:
    """True when all of `text` matches `pattern`, where `*` is any run of characters (also none)."""
    # ok[i][j]: pattern[:i] matches text[:j]
    ok = [[False] * (len(text) + 1) for _ in range(len(pattern) + 1)]
    ok[0][0] = True
    for i in range(1, len(pattern) + 1):
        for j in range(len(text) + 1):
            if pattern[i - 1] == "*":
                ok[i][j] = ok[i - 1][j] or (j > 0 and ok[i][j - 1])
            else:
                ok[i][j] = j > 0 and ok[i - 1][j - 1] and pattern[i - 1] == text[j - 1]
    return ok[len(pattern)][len(text)]


def _one_value_matches(operator: str, value: str, text: str) -> bool:
    """Does one attribute string satisfy the (positive form of the) operator?"""
    if operator == "equals":
        return wildcard_match(value, text)
    if operator == "starts_with":
        return any(wildcard_match(value, text[:j]) for j in range(len(text) + 1))
    if operator == "ends_with":
        return any(wildcard_match(value, text[i:]) for i in range(len(text) + 1))
    if operator in ("contains", "does_not_contain"):
        return any(wildcard_match(value, text[i:j]) for i in range(len(text) + 1) for j in range(i, len(text) + 1))
    # is_one_of / is_not_one_of
    items = [item.strip() for item in value.split(",")]
    return any(wildcard_match(item, text) for item in items if item != "")


def _attribute_strings(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list | tuple | set | frozenset):
        return [x if isinstance(x, str) else str(x) for x in raw if x is not None]
    return [str(raw)]


def _criterion_holds(field: str, value: str, operator: str, attrs: Mapping[str, Any]) -> bool:
    hit = any(_one_value_matches(operator, value, s) for s in _attribute_strings(attrs.get(field)))
    if operator in ("does_not_contain", "is_not_one_of"):
        return not hit
    return hit


_KNOWN_OPERATORS = ("equals", "contains", "does_not_contain", "starts_with", "ends_with", "is_one_of", "is_not_one_of")


def _known(criteria: tuple[tuple[str, str, str], ...], object_type: str) -> list[tuple[str, str, str]]:
    """The criteria the evaluator understands: a field of the object type and a known operator."""
    fields = OBJECT_TYPES.get(object_type, ())
    return [c for c in criteria if c[0] in fields and c[2] in _KNOWN_OPERATORS]


def constraint_matches(
    object_type: str,
    c_and: tuple[tuple[str, str, str], ...],
    c_or: tuple[tuple[str, str, str], ...],
    attrs: Mapping[str, Any],
) -> bool:
    """Does one constraint (its and/or criteria) match the object's attributes?"""
    known_and, known_or = _known(c_and, object_type), _known(c_or, object_type)
    if (c_and and not known_and) or (c_or and not known_or) or not (known_and or known_or):
        return False  # criteria that became empty match nothing
    if not all(_criterion_holds(f, v, o, attrs) for f, v, o in known_and):
        return False
    return not known_or or any(_criterion_holds(f, v, o, attrs) for f, v, o in known_or)


def _kinds(perms: tuple[tuple[str, str, str], ...], grantees: list[str], method: str) -> list[str]:
    """The effects (allow, deny, anything else) these permissions give any of `grantees` for `method`."""
    return [kind for who, m, kind in perms if who in grantees and m == method]


class ReferencePolicy:
    """Same constructor and decisions as `CompiledPolicy`, by brute force."""

    def __init__(
        self,
        constraints: Iterable[ConstraintSource],
        roles: Mapping[str, bool] | None = None,
        *,
        default_user_role_name: str | None = None,
    ) -> None:
        self.constraints = [read_constraint(c) for c in constraints]
        self.roles = dict(roles or {})
        self.default_user_role_name = default_user_role_name

    def is_allowed(self, principal: Principal, object_type: str, attributes: Mapping[str, Any], method: str) -> bool:
        roles = list(principal.roles)
        if not roles and self.default_user_role_name:
            roles = [self.default_user_role_name]
        active = [r for r in roles if principal.mfa or not self.roles.get(r, False)]
        method = method.upper()
        allowed = False
        for c_type, c_and, c_or, group_perms, user_perms in self.constraints:
            kinds = _kinds(group_perms, active, method) + _kinds(user_perms, [principal.user_id], method)
            if c_type != object_type or not ({"allow", "deny"} & set(kinds)):
                continue
            if not constraint_matches(c_type, c_and, c_or, attributes):
                continue
            if "deny" in kinds:
                return False
            allowed = True
        return allowed

    def route_allowed(self, principal: Principal, path: str, method: str, *, object_type: str = "api") -> bool:
        return self.is_allowed(principal, object_type, {"route__path": path}, method)

    def filter_allowed(self, principal: Principal, object_type: str, objects: Iterable[_M], method: str) -> list[_M]:
        return [o for o in objects if self.is_allowed(principal, object_type, o, method)]
