"""The policy decision point's questions beyond allow/deny: explain, who-can, subject routes, what-if.

`PolicyModel` is one policy version as data (constraints with their ids, roles' MFA flags, user-role
assignments) plus its `CompiledPolicy`. Plain decisions go through the compiled index (the hot path);
an explanation tests each rule of the subject's grants on its own, so it names every constraint that
matched and the grant (role or user permission) through which it applied — through one guard index per
object type and method (the policy's own `Rule`s filed by their guards as the evaluator files them, and by
grant), so it tests only the rules an object's attributes can hit, as a plain decision does.
What-if builds a second model from the candidate and compares decisions subject by subject.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pluginsdk.principal import Principal

from .evaluator import CompiledPolicy, FieldIndex, Rule, compile_rule, gc_paused, read_constraint
from .matching import CriterionTest, values_of

__all__ = ["Decision", "Diff", "Explained", "PolicyModel", "Question", "diff_models", "diff_subjects"]

_METHODS = frozenset({"GET", "PUT", "POST", "DELETE"})
_SUBJECT_CACHE = 100_000
"""Resolved subjects kept per model (cleared when full)."""


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


_Hit = tuple[int, str, str, str]
"""(position, constraint id, via, allow|deny) of a constraint that matched through one grant."""


_Filed = tuple[Rule, CriterionTest | None, tuple[_Hit, ...]]
"""A rule as one grant files it under a guard: (rule, the test still to pass once the guard is hit — None
when the guard proves the match —, the hits of the constraints that use the rule through this grant: one
tuple per grant and rule, so its identity tells a rule found twice through one grant)."""
_Uses = Mapping[Rule, list[tuple[int, str, str]]]
"""A grant's rules -> [(position, constraint id, allow|deny)] of the constraints that use them."""


class _Explainer:
    """Every grant's rules for one object type and method, filed by their guards as the evaluator's indexes
    file them (`FieldIndex`: exact values, literal prefixes) and under each guard by grantee, so an
    explanation walks the index once for all of a subject's grants and tests only the rules an object's
    attributes hit, plus the unguarded ones."""

    __slots__ = ("fields", "unguarded")

    def __init__(self, grants: Iterable[tuple[str, _Uses]]) -> None:
        """`grants`: (`role:X` | `user:Y`, its rules)."""
        self.unguarded: dict[str, list[_Filed]] = {}
        tables: dict[tuple[str, bool], dict[str, dict[str, list[_Filed]]]] = {}
        for via, uses in grants:
            for rule, found in uses.items():
                hits = tuple((position, cid, via, kind) for position, cid, kind in found)
                if not rule.guards:
                    self.unguarded.setdefault(via, []).append((rule, rule.check, hits))
                for name, is_exact, text, sure in rule.guards:
                    by_via = tables.setdefault((name, is_exact), {}).setdefault(text, {})
                    by_via.setdefault(via, []).append((rule, None if sure else rule.check, hits))
        self.fields = tuple(
            FieldIndex(f, tables.get((f, True), {}), tables.get((f, False), {})) for f in {f for f, _ in tables}
        )

    def hits(self, attributes: Mapping[str, Any], vias: Sequence[str], out: list[_Hit]) -> None:
        """Append the hits of every rule of these grants that matches the object (each tested once a grant)."""
        candidates: list[_Filed] = []
        for via in vias:
            candidates += self.unguarded.get(via, ())
        for fi in self.fields:
            raw = attributes.get(fi.field)
            for value in (raw,) if type(raw) is str else values_of(raw):
                for by_via in fi.hits(value):
                    for via in vias:
                        candidates += by_via.get(via, ())
        seen: set[int] = set()
        for _, check, hits in candidates:
            if id(hits) not in seen:  # a rule may repeat (several guards hit, a list attribute): its first test decides
                seen.add(id(hits))
                if check is None or check(attributes):
                    out += hits


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
        self._by_grant: dict[tuple[str, str, str], list[tuple[int, str, Any, str]]] | None = None
        self._rules: dict[Any, Rule | None] = {}
        """Rules compiled here for conditions the policy does not know (keyed like `compiled_rule`)."""
        self._explainers: dict[tuple[str, str], _Explainer] | None = None
        self._users: list[str] | None = None
        self._grantees: set[str] | None = None
        self._crit_cache: dict[Any, Any] = {}
        self._subjects: dict[tuple[Any, ...], Principal] = {}
        self.answers: dict[Any, list[Any]] = {}
        """The decision point's answers kept for this model, by question without its object
        (`auth/handlers/policy_checks.py`)."""

    def reassigned(self, assignments: Mapping[str, Sequence[str]]) -> PolicyModel:
        """This model with other user-role assignments; the constraint indexes (which do not depend on them)
        are shared, so a user-role change costs no re-indexing."""
        other = PolicyModel(
            self.constraints, self.roles, assignments, default_role=self.default_role, policy=self.policy
        )
        if self._by_type is not None:
            other._by_type, other._by_grant, other._grantees = self._by_type, self._by_grant, self._grantees
            other._explainers = self._explainers
        other._rules, other._crit_cache = self._rules, self._crit_cache  # same constraints and compiled policy
        return other

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

    def subject(
        self, user_id: str | None, roles: Sequence[str] | None, mfa: bool, *, keep_unknown: bool = False
    ) -> Principal:
        """`principal(...)`, cached on this model (a version's subjects resolve the same way every time)."""
        key = (user_id, None if roles is None else tuple(roles), mfa, keep_unknown)
        p = self._subjects.get(key)
        if p is None:
            if len(self._subjects) >= _SUBJECT_CACHE:
                self._subjects.clear()
            p = self._subjects[key] = self.principal(user_id, roles, mfa, keep_unknown=keep_unknown)
        return p

    def users(self) -> list[str]:
        """Every user the policy knows: those with assignments and those named in user permissions."""
        if self._users is None:
            self._users = sorted({*self.assignments, *self._user_grantees()})
        return self._users

    # -- explain ----------------------------------------------------------------------
    def _index(self) -> dict[str, list[tuple[str, Any]]]:
        if self._by_type is None:
            by_type: dict[str, list[tuple[str, Any]]] = {}
            for c in self.constraints:
                parsed = read_constraint(c)
                by_type.setdefault(parsed[0], []).append((constraint_id(c), parsed))
            self._by_type = by_type
        return self._by_type

    def _grants(self) -> dict[tuple[str, str, str], list[tuple[int, str, Any, str]]]:
        """(object type, METHOD, `role:NAME` | `user:ID`) -> [(position, constraint id, parsed, allow|deny)]."""
        if self._by_grant is None:
            by_grant: dict[tuple[str, str, str], list[tuple[int, str, Any, str]]] = {}
            position = 0
            for object_type, entries in self._index().items():
                for cid, parsed in entries:
                    position += 1
                    seen: set[tuple[str, str, str, str]] = set()
                    for prefix, perms in (("role:", parsed[3]), ("user:", parsed[4])):
                        for who, method, kind in perms:
                            key = (object_type, method, prefix + who)
                            mark = (*key, kind)
                            if kind in ("allow", "deny") and mark not in seen:
                                seen.add(mark)
                                by_grant.setdefault(key, []).append((position, cid, parsed, kind))
            self._by_grant = by_grant
        return self._by_grant

    def _rule(self, parsed: Any) -> Rule | None:
        """The policy's compiled rule for this constraint's condition (compiled here only if it has none)."""
        object_type, c_and, c_or, _, _ = parsed
        known, rule = self.policy.compiled_rule(object_type, c_and, c_or)
        if known:
            return rule
        key = (object_type, c_and, c_or)
        if key not in self._rules:
            self._rules[key] = compile_rule(len(self._rules), object_type, c_and, c_or, self._crit_cache)
        return self._rules[key]

    def _explainers_index(self) -> dict[tuple[str, str], _Explainer]:
        """(object type, METHOD) -> the guard index of every grant's rules for it.

        Built for every grant at once on the first explanation, with the GC paused (70-100 ms at 10,000
        constraints): built one grant at a time under the GC, the indexes cost ~75 µs a grant, most of a
        first pass's time.
        """
        if self._explainers is None:
            with gc_paused():
                grants: dict[tuple[str, str], list[tuple[str, _Uses]]] = {}
                for (object_type, method, via), entries in self._grants().items():
                    uses: dict[Rule, list[tuple[int, str, str]]] = {}
                    for position, cid, parsed, kind in entries:
                        rule = self._rule(parsed)
                        if rule is not None:
                            uses.setdefault(rule, []).append((position, cid, kind))
                    if uses:
                        grants.setdefault((object_type, method), []).append((via, uses))
                self._explainers = {key: _Explainer(found) for key, found in grants.items()}
        return self._explainers

    def _active_roles(self, p: Principal) -> tuple[list[str], list[tuple[str, str]]]:
        """(roles that count, [(role, why)] of those that do not) for this subject."""
        active: list[str] = []
        skipped: list[tuple[str, str]] = []
        for role in dict.fromkeys(p.roles):
            if role not in self.roles:
                skipped.append((role, "the role does not exist"))
            elif self.roles[role] and not p.mfa:
                skipped.append((role, "the role requires MFA and the session is not multi-factor"))
            else:
                active.append(role)
        return active, skipped

    def explain(self, p: Principal, object_type: str, attributes: Mapping[str, Any], method: str) -> Explained:
        """Every constraint that decided (allow and deny), and the roles that did not count."""
        method = method.upper()
        active, skipped = self._active_roles(p)
        explainer = self._explainers_index().get((object_type, method))
        hits: list[_Hit] = []
        if explainer is not None:
            vias = [f"role:{r}" for r in active] + ([f"user:{p.user_id}"] if p.user_id else [])
            explainer.hits(attributes, vias, hits)
        hits.sort()  # constraint order, then the grant order within it
        allowed_by = [(cid, via) for _, cid, via, kind in hits if kind == "allow"]
        denied_by = [(cid, via) for _, cid, via, kind in hits if kind == "deny"]
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
        """Roles and users allowed, and those an explicit deny stops.

        A decision is "some applicable allow matches and no applicable deny matches", and a user's
        applicable rules are the union of its roles' and its own: so each role is matched once and each
        user combines its roles' answers (no per-user evaluation of the policy).
        """
        policy = self.policy
        hits = {
            role: policy.matched(Principal(user_id="", roles=(role,), mfa=True), object_type, attributes, method)
            for role in self.roles
        }
        out = self._roles_who_can(hits, mfa)
        own = self._user_grantees()
        out["allowed_users"], out["denied_users"] = [], []
        for user in self.users():
            allow, deny = self._combined(hits, self.roles_of(user), mfa)
            if user in own:
                a, d = policy.matched(Principal(user_id=user, roles=(), mfa=mfa), object_type, attributes, method)
                allow, deny = allow or a, deny or d
            if deny:
                out["denied_users"].append(user)
            elif allow:
                out["allowed_users"].append(user)
        return out

    def _roles_who_can(self, hits: Mapping[str, tuple[bool, bool]], mfa: bool) -> dict[str, list[str]]:
        """Each role alone: denied (an explicit deny matched), allowed, or allowed only in MFA sessions."""
        out: dict[str, list[str]] = {"allowed_roles": [], "denied_roles": [], "mfa_only_roles": []}
        for role in sorted(self.roles):
            allow, deny = hits[role]
            if deny:
                out["denied_roles"].append(role)
            elif allow and (mfa or not self.roles[role]):
                out["allowed_roles"].append(role)
            elif allow:
                out["mfa_only_roles"].append(role)
        return out

    def _combined(self, hits: Mapping[str, tuple[bool, bool]], roles: Iterable[str], mfa: bool) -> tuple[bool, bool]:
        """(some allow matched, some deny matched) over the roles that count in this session."""
        allow = deny = False
        for role in roles:
            if mfa or not self.roles[role]:
                a, d = hits[role]
                allow, deny = allow or a, deny or d
        return allow, deny

    def _user_grantees(self) -> set[str]:
        if self._grantees is None:
            self._grantees = {via[5:] for _, _, via in self._grants() if via.startswith("user:")}
        return self._grantees

    def web_patterns(self, p: Principal) -> list[str]:
        """route__path patterns of the web constraints that allow this subject some method."""
        active = {r for r in p.roles if p.mfa or not self.roles.get(r)}
        out: set[str] = set()
        for _cid, parsed in self._index().get("web", ()):
            grants = [(m, kind) for who, m, kind in parsed[3] if who in active]
            grants += [(m, kind) for who, m, kind in parsed[4] if who == p.user_id]
            if any(kind == "allow" and m in _METHODS for m, kind in grants):
                out.update(v for f, v, _ in (*parsed[1], *parsed[2]) if f == "route__path")
        return sorted(out)

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


def _touched(before: PolicyModel, after: PolicyModel) -> tuple[set[tuple[str, str, str]], set[str]]:
    """What a change can affect: the (object type, METHOD, grantee) of every constraint that differs, and
    the grantees (`role:NAME`) whose MFA flag changed (everything they reach)."""
    old = {constraint_id(c): c for c in before.constraints}
    new = {constraint_id(c): c for c in after.constraints}
    grants: set[tuple[str, str, str]] = set()
    for cid in old.keys() | new.keys():
        a, b = old.get(cid), new.get(cid)
        if a == b:
            continue
        for c in (a, b):
            if c is None:
                continue
            object_type, _, _, group_perms, user_perms = read_constraint(c)
            grants.update((object_type, m, f"role:{who}") for who, m, _ in group_perms)
            grants.update((object_type, m, f"user:{who}") for who, m, _ in user_perms)
    flags = {f"role:{r}" for r in before.roles.keys() | after.roles.keys() if before.roles.get(r) != after.roles.get(r)}
    return grants, flags


def _masks(model: PolicyModel, who: Principal, questions: Sequence[Question]) -> tuple[int, int]:
    """Bit i set when some allow (first) or deny (second) rule of `who`'s own grants matches question i."""
    allow = deny = 0
    matched = model.policy.matched
    for i, q in enumerate(questions):
        a, d = matched(who, q.object_type, q.attributes, q.method)
        if a:
            allow |= 1 << i
        if d:
            deny |= 1 << i
    return allow, deny


class _Bits:
    """One model's allow/deny bitmasks over the questions: per role alone, and per user's own grants.

    A decision is "some applicable allow matches and no applicable deny does", and a subject's applicable
    rules are the union of its active roles' and its own — so a subject's answers are ORs of these masks.
    """

    def __init__(
        self,
        model: PolicyModel,
        questions: Sequence[Question],
        roles: Iterable[str],
        users: Iterable[str],
        *,
        same: _Bits | None = None,
        touched: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        """`same`: another model's masks, reused for every grantee (`role:X`, `user:Y`) not in `touched`."""
        self.model = model
        self.roles: dict[str, tuple[int, int]] = {}
        for r in roles:
            if r not in model.roles:
                continue
            if same is not None and r in same.roles and f"role:{r}" not in touched:
                self.roles[r] = same.roles[r]
            else:
                self.roles[r] = _masks(model, Principal("", (r,), mfa=True), questions)
        self.users: dict[str, tuple[int, int]] = {}
        for u in users:
            if same is not None and u in same.users and f"user:{u}" not in touched:
                self.users[u] = same.users[u]
            else:
                self.users[u] = _masks(model, Principal(u, ()), questions)

    def user(self, user_id: str) -> int:
        allow = deny = 0
        for r in self.model.roles_of(user_id):
            if not self.model.roles[r]:  # users are compared as non-MFA sessions: MFA-only roles do not count
                a, d = self.roles[r]
                allow, deny = allow | a, deny | d
        a, d = self.users.get(user_id, (0, 0))
        allow, deny = allow | a, deny | d
        return allow & ~deny

    def role(self, role: str) -> int:
        a, d = self.roles.get(role, (0, 0))
        return a & ~d


class Diff(NamedTuple):
    """What `diff_models` found: the first changes (up to its `keep`), and complete counts."""

    changes: list[tuple[str, Question, bool, bool]]
    """(subject, question, before, after), in subject order."""
    allowed_to_denied: int
    denied_to_allowed: int
    subjects: int
    compared: int
    """Decisions compared (subjects x questions)."""

    @property
    def found(self) -> int:
        return self.allowed_to_denied + self.denied_to_allowed


def diff_subjects(
    before: PolicyModel, after: PolicyModel, user_ids: Sequence[str] | None = None
) -> tuple[list[str], list[str]]:
    """(users, roles) a diff compares: `user_ids`, or every user either model knows; every role of either."""
    users = list(user_ids) if user_ids is not None else sorted({*before.users(), *after.users()})
    return users, sorted({*before.roles, *after.roles})


def diff_models(
    before: PolicyModel,
    after: PolicyModel,
    questions: Sequence[Question],
    *,
    user_ids: Sequence[str] | None = None,
    keep: int | None = None,
) -> Diff:
    """Decisions that differ between two models: the first `keep` changes (all when None) and the counts.

    Subjects: every user either model knows (or `user_ids`), as a non-MFA session, and every role alone
    (MFA session). Each role's and each user's own grants are matched once per question and model; a
    user's decisions are then bit operations on its roles' masks (see `_Bits`). Changes past `keep` are
    counted, not kept, so what a call holds is bounded by its limit, not by how much the change flips.
    """
    users, roles = diff_subjects(before, after, user_ids)
    own = (before._user_grantees() | after._user_grantees()) & set(users)
    grants, _ = _touched(before, after)
    b_bits = _Bits(before, questions, roles, own)
    a_bits = _Bits(after, questions, roles, own, same=b_bits, touched={via for _, _, via in grants})
    changes: list[tuple[str, Question, bool, bool]] = []
    room = len(questions) * (len(users) + len(roles)) if keep is None else keep
    lost = gained = 0

    def flips(name: str, was: int, now: int) -> None:
        nonlocal lost, gained
        diff = was ^ now
        if not diff:
            return
        down = (was & diff).bit_count()
        lost, gained = lost + down, gained + diff.bit_count() - down
        while diff and len(changes) < room:
            low = diff & -diff
            i = low.bit_length() - 1
            changes.append((name, questions[i], bool(was & low), bool(now & low)))
            diff ^= low

    for u in users:
        flips(f"user:{u}", b_bits.user(u), a_bits.user(u))
    for r in roles:
        flips(f"role:{r}", b_bits.role(r), a_bits.role(r))
    subjects = len(users) + len(roles)
    return Diff(changes, lost, gained, subjects, subjects * len(questions))


def object_questions(objects: Iterable[Mapping[str, Any]]) -> list[Question]:
    """Every method on each given {objectType, attributes}."""
    out: list[Question] = []
    for o in objects:
        ot = str(o.get("objectType") or o.get("object_type") or "")
        attrs = o.get("attributes") or {}
        for m in ("GET", "PUT", "POST", "DELETE"):
            out.append(Question("object", ot, attrs, m, json.dumps(attrs, sort_keys=True, default=str)))
    return out
