"""The policy decision point's questions beyond allow/deny: explain, who-can, subject routes, what-if.

`PolicyModel` is one policy version as data (constraints with their ids, roles' MFA flags, user-role
assignments) plus its `CompiledPolicy`. Plain decisions go through the compiled index (the hot path);
an explanation walks the constraints of one object type and tests each rule on its own, so it names
every constraint that matched and the grant (role or user permission) through which it applied.
What-if builds a second model from the candidate and compares decisions subject by subject.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pluginsdk.principal import Principal

from .evaluator import CompiledPolicy, Rule, _compile_rule, read_constraint

__all__ = ["Decision", "Explained", "PolicyModel", "Question", "diff_models"]


def constraint_id(c: Mapping[str, Any]) -> str:
    return str(c.get("constraintId") or c.get("constraint_id") or c.get("identifier") or "")


@dataclass(frozen=True, slots=True)
class Question:
    """One decision to compare in a what-if: a route (object type api, `route__path`) or an object."""

    kind: str
    object_type: str
    attributes: Mapping[str, Any]
    method: str
    target: str


@dataclass(slots=True)
class Explained:
    allowed: bool
    allowed_by: list[tuple[str, str]] = field(default_factory=list)
    """(constraint id, via) of the allow constraints that matched."""
    denied_by: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(role, why) of roles that did not count."""
    roles: tuple[str, ...] = ()


Decision = tuple[str, str, str, str, bool, bool]
"""(subject, kind, object type, target, method, before, after) minus nothing: see `diff_models`."""


class PolicyModel:
    """One policy version: constraints (with ids), roles -> mfaRequired, user -> assigned roles."""

    def __init__(
        self,
        constraints: Sequence[Mapping[str, Any]],
        roles: Mapping[str, bool],
        assignments: Mapping[str, Sequence[str]] | None = None,
        *,
        default_role: str | None = None,
        policy: CompiledPolicy | None = None,
    ) -> None:
        self.constraints = list(constraints)
        self.roles = dict(roles)
        self.assignments = {u: tuple(r) for u, r in (assignments or {}).items()}
        self.default_role = default_role if default_role in self.roles else None
        self.policy = policy if policy is not None else CompiledPolicy(self.constraints, self.roles)
        self._by_type: dict[str, list[tuple[str, Any]]] | None = None
        self._rules: dict[int, Rule | None] = {}
        self._crit_cache: dict[Any, Any] = {}

    # -- subjects ---------------------------------------------------------------------
    def roles_of(self, user_id: str) -> tuple[str, ...]:
        """A user's effective roles, as the auth service resolves them (unknown roles dropped, default role)."""
        roles = tuple(r for r in self.assignments.get(user_id, ()) if r in self.roles)
        if not roles and self.default_role:
            roles = (self.default_role,)
        return roles

    def principal(
        self, user_id: str | None, roles: Sequence[str] | None, mfa: bool, *, keep_unknown: bool = False
    ) -> Principal:
        """The subject as a principal: explicit roles (only existing ones count) or the user's assignments.

        `keep_unknown` keeps roles that do not exist (an explanation names them as skipped).
        """
        if roles is None:
            roles = self.assignments.get(user_id or "", ())
            if not any(r in self.roles for r in roles):
                roles = (*roles, *((self.default_role,) if self.default_role else ()))
        resolved = tuple(dict.fromkeys(r for r in roles if keep_unknown or r in self.roles))
        return Principal(user_id=user_id or "", roles=resolved, mfa=mfa)

    def users(self) -> list[str]:
        """Every user the policy knows: those with assignments and those named in user permissions."""
        named = {who for c in self.constraints for who, _, _ in read_constraint(c)[4]}
        return sorted({*self.assignments, *named})

    # -- explain ----------------------------------------------------------------------
    def _index(self) -> dict[str, list[tuple[str, Any]]]:
        if self._by_type is None:
            by_type: dict[str, list[tuple[str, Any]]] = {}
            for c in self.constraints:
                parsed = read_constraint(c)
                by_type.setdefault(parsed[0], []).append((constraint_id(c), parsed))
            self._by_type = by_type
        return self._by_type

    def _rule(self, parsed: Any) -> Rule | None:
        key = id(parsed)
        if key not in self._rules:
            object_type, c_and, c_or, _, _ = parsed
            self._rules[key] = _compile_rule(len(self._rules), object_type, c_and, c_or, self._crit_cache)
        return self._rules[key]

    def explain(self, p: Principal, object_type: str, attributes: Mapping[str, Any], method: str) -> Explained:
        """Every constraint that decided (allow and deny), and the roles that did not count."""
        method = method.upper()
        active: list[str] = []
        skipped: list[tuple[str, str]] = []
        for role in dict.fromkeys(p.roles):
            if role not in self.roles:
                skipped.append((role, "the role does not exist"))
            elif self.roles[role] and not p.mfa:
                skipped.append((role, "the role requires MFA and the session is not multi-factor"))
            else:
                active.append(role)
        allowed_by: list[tuple[str, str]] = []
        denied_by: list[tuple[str, str]] = []
        for cid, parsed in self._index().get(object_type, ()):
            _, _, _, group_perms, user_perms = parsed
            grants = [
                (f"role:{who}", kind)
                for who, m, kind in group_perms
                if m == method and who in active and kind in ("allow", "deny")
            ]
            if p.user_id:
                grants += [
                    (f"user:{who}", kind)
                    for who, m, kind in user_perms
                    if m == method and who == p.user_id and kind in ("allow", "deny")
                ]
            if not grants:
                continue
            rule = self._rule(parsed)
            if rule is None or not rule.matches(attributes):
                continue
            for via, kind in dict.fromkeys(grants):
                (denied_by if kind == "deny" else allowed_by).append((cid, via))
        return Explained(
            allowed=bool(allowed_by) and not denied_by,
            allowed_by=allowed_by,
            denied_by=denied_by,
            skipped=skipped,
            roles=tuple(active),
        )

    # -- who can ----------------------------------------------------------------------
    def who_can(
        self, object_type: str, attributes: Mapping[str, Any], method: str, *, mfa: bool
    ) -> dict[str, list[str]]:
        policy = self.policy
        out: dict[str, list[str]] = {
            "allowed_roles": [],
            "denied_roles": [],
            "mfa_only_roles": [],
            "allowed_users": [],
            "denied_users": [],
        }
        for role in sorted(self.roles):
            p = Principal(user_id="", roles=(role,), mfa=mfa)
            if policy.is_allowed(p, object_type, attributes, method):
                out["allowed_roles"].append(role)
            elif policy.denied_explicitly(p, object_type, attributes, method):
                out["denied_roles"].append(role)
            elif (
                not mfa
                and self.roles[role]
                and policy.is_allowed(Principal(user_id="", roles=(role,), mfa=True), object_type, attributes, method)
            ):
                out["mfa_only_roles"].append(role)
        for user in self.users():
            p = Principal(user_id=user, roles=self.roles_of(user), mfa=mfa)
            if policy.is_allowed(p, object_type, attributes, method):
                out["allowed_users"].append(user)
            elif policy.denied_explicitly(p, object_type, attributes, method):
                out["denied_users"].append(user)
        return out

    def web_patterns(self, p: Principal) -> list[str]:
        """route__path patterns of the web constraints that allow this subject some method."""
        out: list[str] = []
        for method in ("GET", "PUT", "POST", "DELETE"):
            for _cid, parsed in self._index().get("web", ()):
                explained_for = [
                    who
                    for who, m, kind in parsed[3]
                    if m == method and kind == "allow" and who in p.roles and (p.mfa or not self.roles.get(who))
                ] + [who for who, m, kind in parsed[4] if m == method and kind == "allow" and who == p.user_id]
                if explained_for:
                    out += [v for f, v, _ in (*parsed[1], *parsed[2]) if f == "route__path"]
        return sorted(set(out))

    # -- what if --------------------------------------------------------------------------
    def candidate(
        self,
        *,
        add: Iterable[Mapping[str, Any]] = (),
        delete: Iterable[str] = (),
        role_mfa: Mapping[str, bool] | None = None,
        user_roles: Mapping[str, Sequence[str]] | None = None,
    ) -> PolicyModel:
        """This model with a change applied (this one is left as it is)."""
        added = {constraint_id(c): c for c in add}
        gone = set(delete) | set(added)
        constraints = [c for c in self.constraints if constraint_id(c) not in gone] + list(added.values())
        roles = dict(self.roles)
        for name, flag in (role_mfa or {}).items():
            if name in roles:
                roles[name] = bool(flag)
        assignments = dict(self.assignments)
        for user, rs in (user_roles or {}).items():
            assignments[user] = tuple(rs)
        return PolicyModel(constraints, roles, assignments, default_role=self.default_role)


def diff_models(
    before: PolicyModel,
    after: PolicyModel,
    questions: Sequence[Question],
    *,
    user_ids: Sequence[str] | None = None,
) -> tuple[list[tuple[str, Question, bool, bool]], int, int]:
    """Decisions that differ between two models: ([(subject, question, before, after)], subjects, compared).

    Subjects: every user either model knows (or `user_ids`), and every role alone (MFA session).
    Subjects whose effective roles and user permissions are the same share their answers.
    """
    users = list(user_ids) if user_ids is not None else sorted({*before.users(), *after.users()})
    subjects: list[tuple[str, Principal, Principal]] = []
    for u in users:
        subjects.append((f"user:{u}", Principal(u, before.roles_of(u)), Principal(u, after.roles_of(u))))
    for role in sorted({*before.roles, *after.roles}):
        b = Principal("", (role,) if role in before.roles else (), mfa=True)
        a = Principal("", (role,) if role in after.roles else (), mfa=True)
        subjects.append((f"role:{role}", b, a))
    changes: list[tuple[str, Question, bool, bool]] = []
    memo: dict[tuple[Any, ...], list[tuple[Question, bool, bool]]] = {}
    b_policy, a_policy = before.policy, after.policy
    b_users, a_users = set(before.users()), set(after.users())
    for name, pb, pa in subjects:
        key = (
            pb.roles,
            pa.roles,
            pb.mfa,
            pb.user_id if pb.user_id in b_users or pb.user_id in a_users else None,
        )
        flips = memo.get(key)
        if flips is None:
            flips = []
            for q in questions:
                was = b_policy.is_allowed(pb, q.object_type, q.attributes, q.method)
                now = a_policy.is_allowed(pa, q.object_type, q.attributes, q.method)
                if was != now:
                    flips.append((q, was, now))
            memo[key] = flips
        changes += [(name, q, was, now) for q, was, now in flips]
    return changes, len(subjects), len(subjects) * len(questions)


def object_questions(objects: Iterable[Mapping[str, Any]]) -> list[Question]:
    """Every method on each given {objectType, attributes}."""
    out: list[Question] = []
    for o in objects:
        ot = str(o.get("objectType") or o.get("object_type") or "")
        attrs = o.get("attributes") or {}
        for m in ("GET", "PUT", "POST", "DELETE"):
            out.append(Question("object", ot, attrs, m, json.dumps(attrs, sort_keys=True, default=str)))
    return out
