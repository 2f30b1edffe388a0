"""The compiled two-tier policy evaluator.

Built once per policy version from the stored constraints and the roles' `mfaRequired` flags:

1. Each constraint becomes a `Rule`: its known criteria compiled to closures (`matching.py`), plus
   a *guard* — literal text that any object it matches must carry in one field (an exact value,
   or a literal prefix), when the criteria imply one.
2. Rules are indexed by (object type, method) -> role -> allow/deny rules, and the same for named
   users (`userPermissions`).
3. A decision looks up a *bucket* cached per (roles, mfa, user, object type, method): the allow and
   deny rules of exactly that principal, deduplicated, with guarded rules in dicts keyed by exact
   value or by literal prefix (one dict per prefix length). Evaluating an object therefore
   touches only the rules whose guard its attributes hit, plus the few unguarded ones — never the
   whole policy.

Decision: allowed iff some applicable allow rule matches and no applicable deny rule matches.
Tier 1 is object type `api` (or `web`) with `route__path` set to the concrete request path.
`tests/support/reference_policy.py` states the same rules plainly; the tests hold the two to the same answers.
"""

from __future__ import annotations

import gc
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, cast

from pluginsdk.models.auth_vocabulary import OBJECT_TYPES, PERMISSIONS
from pluginsdk.principal import Principal

if TYPE_CHECKING:
    from pluginsdk.models.auth import Constraint

from .matching import (
    EXACT,
    NEGATED_OPERATORS,
    PREFIX,
    CriterionTest,
    Pattern,
    compile_criterion,
    operator_patterns,
    values_of,
)

__all__ = ["CompiledPolicy", "ConstraintSource", "Grants", "compile_policy", "gc_paused", "read_constraint"]

ConstraintSource: TypeAlias = "Constraint | Mapping[str, Any]"
"""A `Constraint`, or its dict form with camelCase (wire) or snake_case keys."""

_M = TypeVar("_M", bound=Mapping[str, Any])
_P = TypeVar("_P")

_EFFECTS: Final = frozenset({"allow", "deny"})
_MAX_GUARD: Final = 64
"""Prefix guards longer than this are cut (a shorter guard only admits more candidates, never fewer)."""

_Criteria = tuple[tuple[str, str, str], ...]
"""Criteria as (field, value, operator) triples."""
_Perms = tuple[tuple[str, str, str], ...]
"""Permissions as (group or user id, METHOD, allow|deny) triples."""
_Parsed = tuple[str, _Criteria, _Criteria, _Perms, _Perms]


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while building an index: building allocates many small long-lived objects, and the
    collector would rescan the growing heap over and over (it doubled the build time at 10,000 constraints)
    with nothing to find."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _is_mapping(v: Any) -> bool:
    return type(v) is dict or isinstance(v, Mapping)  # the exact-type test skips the slow ABC check


def _text(v: Any) -> str:
    return v if type(v) is str else "" if v is None else str(v)


def _criteria(raw: Any) -> _Criteria:
    if not raw:
        return ()
    out: list[tuple[str, str, str]] = []
    for c in raw:
        if _is_mapping(c):
            field, value, operator = c.get("field"), c.get("value"), c.get("operator")
        else:
            field, value, operator = c.field, c.value, c.operator
        if type(field) is not str or type(value) is not str or type(operator) is not str:
            field, value, operator = _text(field), _text(value), _text(operator)
        out.append((field, value, operator))
    return tuple(out)


# The canonical spellings map to themselves without calling upper()/lower().
_CANONICAL: Final = {w: w for w in (*PERMISSIONS, "allow", "deny")}


def _perms(raw: Any, who_camel: str, who_snake: str) -> _Perms:
    if not raw:
        return ()
    out: list[tuple[str, str, str]] = []
    canonical = _CANONICAL
    for p in raw:
        if _is_mapping(p):
            who = p.get(who_camel) or p.get(who_snake)
            perm = p.get("permission")
            kind = p.get("permissionType") or p.get("permission_type")
        else:
            who, perm, kind = getattr(p, who_snake), p.permission, p.permission_type
        method = canonical.get(perm) if type(perm) is str else None
        effect = canonical.get(kind) if type(kind) is str else None
        out.append(
            (
                who if type(who) is str else _text(who),
                method or _text(perm).upper(),
                effect or _text(kind).lower(),
            )
        )
    return tuple(out)


def read_constraint(c: ConstraintSource) -> _Parsed:
    """The evaluator's view of a constraint; tolerant of stored data (it never raises on content).

    Permissions are compared case-insensitively (`get`/`Deny` from old data still count, a deny is
    never dropped over spelling); everything else is exact.
    """
    if _is_mapping(c):
        m: Mapping[str, Any] = c  # type: ignore[assignment]
        return (
            _text(m.get("objectType") or m.get("object_type")),
            _criteria(m.get("criteriaAnd") or m.get("criteria_and")),
            _criteria(m.get("criteriaOr") or m.get("criteria_or")),
            _perms(m.get("groupPermissions") or m.get("group_permissions"), "groupId", "group_id"),
            _perms(m.get("userPermissions") or m.get("user_permissions"), "userId", "user_id"),
        )
    c = cast("Constraint", c)  # the model, imported only for typing (engines that never see one skip its build)
    return (
        c.object_type,
        _criteria(c.criteria_and),
        _criteria(c.criteria_or),
        _perms(c.group_permissions, "groupId", "group_id"),
        _perms(c.user_permissions, "userId", "user_id"),
    )


_Guard = tuple[str, bool, str, bool]
"""(field, exact?, literal text, sure?): an object the rule matches has `field` equal to (exact) or
starting with the text; `sure` when finding the object under this guard already proves the match."""


class Rule:
    """One distinct condition (object type + criteria), compiled; shared by every constraint,
    role and method that uses it."""

    __slots__ = ("all_of", "any_of", "check", "checks", "guards", "index", "plan", "terms")

    def __init__(
        self,
        index: int,
        all_of: tuple[CriterionTest, ...],
        any_of: tuple[CriterionTest, ...],
        guards: tuple[_Guard, ...],
        terms: tuple[_Criteria, _Criteria] = ((), ()),
    ) -> None:
        self.index = index
        self.terms = terms
        """The criteria tested, as (field, value, operator) triples: (criteriaAnd, criteriaOr) without the entries
        ignored at evaluation (a query plan states the rule from them)."""
        """Identity of the distinct condition (for deduplication inside a bucket)."""
        self.all_of = all_of
        self.any_of = any_of
        self.guards = guards
        """A match implies one of these holds; empty = unguarded (tested for every object)."""
        self.check: CriterionTest = self.matches
        """The cheapest full test: the criterion itself when there is only one."""
        if len(all_of) + len(any_of) == 1:
            self.check = (all_of or any_of)[0]
        self.checks = (self.check,)
        """`check` alone, shared by every index that files this rule alone under a guard text."""
        self.plan: Any = None
        """The rule as a query plan states it, once asked for (`plans.py`)."""

    def matches(self, attrs: Mapping[str, Any]) -> bool:
        for test in self.all_of:
            if not test(attrs):
                return False
        if not self.any_of:
            return True
        for test in self.any_of:  # noqa: SIM110 -- a plain loop is ~2x faster than any(genexpr) here
            if test(attrs):
                return True
        return False


_Crit = tuple[str, tuple[Pattern, ...], bool]


def _guards_of(crit: _Crit, alone: bool) -> list[_Guard] | None:
    """One guard per pattern of a positive criterion, or None when some pattern has no literal start.

    `alone`: the rule holds whenever this criterion does, so an exact or `prefix*` pattern found
    through its guard needs no further test.
    """
    field, patterns, negate = crit
    if negate or not patterns:
        return None
    out: list[_Guard] = []
    for p in patterns:
        if not p.head:
            return None
        sure = alone and (p.kind == EXACT or (p.kind == PREFIX and len(p.head) <= _MAX_GUARD))
        out.append((field, p.kind == EXACT, p.head if p.kind == EXACT else p.head[:_MAX_GUARD], sure))
    return out


def _selectivity(guards: list[_Guard]) -> int:
    """Fewer alternatives first, then exact values, then longer prefixes."""
    exact = all(g[1] for g in guards)
    return 10_000 // len(guards) + (500 if exact else min(len(g[2]) for g in guards))


_Compiled = tuple[_Crit, CriterionTest, tuple[str, str, str]]
"""A known criterion: its patterns, its test, and its (field, value, operator) as written."""


def _compile_criteria(
    object_type: str, raw: _Criteria, crit_cache: dict[tuple[str, str, str, str], _Compiled | None]
) -> list[_Compiled]:
    """The known criteria of one set, compiled (unknown fields and operators are dropped: ignored at evaluation)."""
    kept: list[_Compiled] = []
    fields = OBJECT_TYPES.get(object_type, ())
    for field, value, operator in raw:
        key = (object_type, field, value, operator)
        if key in crit_cache:
            compiled = crit_cache[key]
        else:
            patterns = operator_patterns(operator, value) if field in fields else None
            compiled = None
            if patterns is not None:
                crit = (field, patterns, operator in NEGATED_OPERATORS)
                compiled = (crit, compile_criterion(*crit), (field, value, operator))
            crit_cache[key] = compiled
        if compiled is not None:
            kept.append(compiled)
    return kept


def _choose_guards(all_of: list[_Compiled], any_of: list[_Compiled]) -> list[_Guard] | None:
    """The most selective guard of the criteriaAnd, else the union of every criteriaOr entry's guards."""
    guards: list[_Guard] | None = None
    alone = len(all_of) == 1 and not any_of
    for crit, _, _ in all_of:
        g = _guards_of(crit, alone)
        if g is not None and (guards is None or _selectivity(g) > _selectivity(guards)):
            guards = g
    if guards is not None or not any_of:
        return guards
    # Some criteriaOr entry must hold: guard on the union of all of them if each has a guard.
    union: list[_Guard] = []
    for crit, _, _ in any_of:
        g = _guards_of(crit, not all_of)
        if g is None:
            return None
        union += g
    return union or None


def compile_rule(
    index: int,
    object_type: str,
    c_and: _Criteria,
    c_or: _Criteria,
    crit_cache: dict[tuple[str, str, str, str], _Compiled | None],
) -> Rule | None:
    """Compile one distinct condition; None when it can match nothing.

    `crit_cache` shares compiled criteria between conditions (one policy repeats the same
    criterion in many constraints).
    """
    all_of = _compile_criteria(object_type, c_and, crit_cache)
    any_of = _compile_criteria(object_type, c_or, crit_cache)
    if (c_and and not all_of) or (c_or and not any_of):
        return None  # a criterion set that became empty matches nothing (never widens access)
    if not all_of and not any_of:
        return None
    guards = _choose_guards(all_of, any_of)
    return Rule(
        index,
        tuple(test for _, test, _ in all_of),
        tuple(test for _, test, _ in any_of),
        tuple(sorted(set(guards))) if guards else (),
        (tuple(raw for _, _, raw in all_of), tuple(raw for _, _, raw in any_of)),
    )


_Filing = Any
"""What one guard text files: `True` when some rule there needs no further test, else the tuple of the rules'
checks (a rule's own `checks` 1-tuple when it is alone, so most entries allocate nothing)."""


def _file(old: _Filing | None, rule: Rule, sure: bool) -> _Filing:
    if old is True or sure:
        return True
    return rule.checks if old is None else (*old, rule.check)


class FieldIndex:
    """Guarded rules of one field: a dict of exact values, and sorted literal prefixes.

    Prefix lookup: every stored prefix of a value `v` is <= `v` and a prefix of the greatest stored
    key <= `v` (found by bisection), so walking that key's chain of stored prefixes (`parent`)
    visits all of them — a handful of `startswith` calls whatever the number of rules.
    """

    __slots__ = ("entries", "exact", "field", "keys", "parent")

    def __init__(self, field: str, exact: dict[str, _Filing], prefixes: dict[str, _Filing]) -> None:
        self.field = field
        self.exact = exact
        self.keys = sorted(prefixes)
        self.entries = [prefixes[k] for k in self.keys]
        self.parent: list[int] = []
        stack: list[int] = []
        for i, key in enumerate(self.keys):
            while stack and not key.startswith(self.keys[stack[-1]]):
                stack.pop()
            self.parent.append(stack[-1] if stack else -1)
            stack.append(i)

    def hits(self, value: str) -> list[_Filing]:
        """What the guards `value` hits file: its exact value's, then its stored prefixes', longest first."""
        entry = self.exact.get(value)
        found = [] if entry is None else [entry]
        keys = self.keys
        if keys:
            parent, entries = self.parent, self.entries
            i = bisect_right(keys, value) - 1
            while i >= 0:
                if value.startswith(keys[i]):
                    found.append(entries[i])
                i = parent[i]
        return found


def _never(attrs: Mapping[str, Any]) -> bool:
    return False


def _hit(entry: _Filing, attrs: Mapping[str, Any]) -> bool:
    if entry is True:
        return True
    for check in entry:  # noqa: SIM110 -- a plain loop is faster than any(genexpr) here
        if check(attrs):
            return True
    return False


class _Index:
    """A principal's allow (or deny) rules for one object type and method, keyed by their guards.

    Built for every new principal, object type and method (a bucket), so it allocates little: a few dicts and
    lists per field, and no object per rule (the cyclic GC's work grows with every object a cached bucket
    keeps; per-rule entry objects made it most of a bucket's build time at 10,000 constraints).
    """

    __slots__ = ("fields", "match", "rules", "unguarded")

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        unguarded: list[CriterionTest] = []
        exact: dict[str, dict[str, _Filing]] = {}
        prefix: dict[str, dict[str, _Filing]] = {}
        for rule in self.rules:
            if not rule.guards:
                unguarded.append(rule.check)
            for field, is_exact, text, sure in rule.guards:
                table = exact if is_exact else prefix
                texts = table.get(field)
                if texts is None:
                    texts = table[field] = {}
                texts[text] = _file(texts.get(text), rule, sure)
        self.unguarded = tuple(unguarded)
        self.fields = tuple(FieldIndex(f, exact.get(f, {}), prefix.get(f, {})) for f in {*exact, *prefix})
        self.match: CriterionTest = _never if self.empty else self._matcher()
        """`attrs -> does some rule here match`, specialised for this index's shape."""

    @property
    def empty(self) -> bool:
        return not self.unguarded and not self.fields

    def candidates(self, attrs: Mapping[str, Any]) -> Iterator[Rule]:
        """The rules one object is tested against (a rule may repeat when a list attribute hits it twice): the
        unguarded ones and those a guard of which the object's attributes hit (for tests and the benchmark)."""
        for rule in self.rules:
            if not rule.guards:
                yield rule
            for field, is_exact, text, _ in rule.guards:
                for v in values_of(attrs.get(field)):
                    if v == text or (not is_exact and v.startswith(text)):
                        yield rule

    def _matcher(self) -> CriterionTest:
        unguarded = self.unguarded
        fields = tuple((fi.field, fi.exact, fi.keys, fi.entries, fi.parent) for fi in self.fields)

        def any_match(attrs: Mapping[str, Any]) -> bool:
            for check in unguarded:
                if check(attrs):
                    return True
            for field, exact, keys, entries, parent in fields:
                raw = attrs.get(field)
                for v in (raw,) if type(raw) is str else values_of(raw):
                    entry = exact.get(v)
                    if entry is not None and _hit(entry, attrs):
                        return True
                    if keys:
                        i = bisect_right(keys, v) - 1
                        while i >= 0:
                            if v.startswith(keys[i]) and _hit(entries[i], attrs):
                                return True
                            i = parent[i]
            return False

        return any_match


class Grants(list[tuple[Rule, bool]]):
    """The rules one role or user is granted for one object type and method, as (rule, is a deny)."""

    __slots__ = ("plan",)

    def __init__(self) -> None:
        super().__init__()
        self.plan: Any = None
        """What a query plan states from these rules, once asked for (`plans.py`): shared by every subject
        holding this role, so a subject's plan merges a few of these instead of walking every rule."""


class _Bucket:
    """What one principal may do with one object type and method: its deny and allow indexes."""

    __slots__ = ("allow", "decide", "deny")

    def __init__(self, allow: Iterable[Rule], deny: Iterable[Rule]) -> None:
        self.allow = _Index(allow)
        self.deny = _Index(deny)
        self.decide: CriterionTest
        """`attrs -> allowed?`: no allow -> deny; any matching deny -> deny; else any matching allow."""
        if self.allow.empty:
            self.decide = _never
        elif self.deny.empty:
            self.decide = self.allow.match
        else:
            denied, allowed = self.deny.match, self.allow.match

            def decide(attrs: Mapping[str, Any]) -> bool:
                return not denied(attrs) and allowed(attrs)

            self.decide = decide


_NOTHING: Final = _Bucket((), ())


class CompiledPolicy:
    """Every constraint compiled and indexed; answers tier-1 and tier-2 questions.

    Immutable once built: a new policy version means a new `CompiledPolicy` (build cost is linear,
    ~15 µs per constraint on the 2-core VM). Safe to share between tasks and threads: the bucket cache
    only ever gains complete entries, and is simply cleared when it reaches `cache_size`.
    """

    def __init__(
        self,
        constraints: Iterable[ConstraintSource],
        roles: Mapping[str, bool] | None = None,
        *,
        default_user_role_name: str | None = None,
        cache_size: int = 16384,
    ) -> None:
        """`roles`: role name -> mfaRequired (a role absent here counts as not requiring MFA)."""
        self.mfa_roles = frozenset(name for name, mfa in (roles or {}).items() if mfa)
        self.default_user_role_name = default_user_role_name or None
        self.cache_size = cache_size
        # (object_type, method) -> role or user -> [(rule, is_deny)]
        self._by_role: dict[tuple[str, str], dict[str, Grants]] = {}
        self._by_user: dict[tuple[str, str], dict[str, Grants]] = {}
        self._users: set[str] = set()
        self._cache: dict[tuple[Any, ...], _Bucket] = {}
        self._plans: dict[tuple[Any, ...], tuple[Any]] = {}
        with gc_paused():
            self._compile(constraints)

    def _compile(self, constraints: Iterable[ConstraintSource]) -> None:
        # Constraints with the same object type and criteria share one Rule (policies repeat them
        # for many roles), so a bucket tests each distinct condition once.
        rules: dict[tuple[str, _Criteria, _Criteria], Rule | None] = {}
        crit_cache: dict[tuple[str, str, str, str], _Compiled | None] = {}
        by_role, by_user = self._by_role, self._by_user
        for source in constraints:
            object_type, c_and, c_or, group_perms, user_perms = read_constraint(source)
            if not group_perms and not user_perms:
                continue
            key = (object_type, c_and, c_or)
            if key in rules:
                rule = rules[key]
            else:
                rule = rules[key] = compile_rule(len(rules), object_type, c_and, c_or, crit_cache)
            if rule is None:
                continue
            for target, perms in ((by_role, group_perms), (by_user, user_perms)):
                for who, method, kind in perms:
                    if kind not in _EFFECTS:
                        continue
                    per_who = target.get((object_type, method))
                    if per_who is None:
                        per_who = target[(object_type, method)] = {}
                    entries = per_who.get(who)
                    if entries is None:
                        entries = per_who[who] = Grants()
                    entries.append((rule, kind == "deny"))
        self._users.update(who for per_who in by_user.values() for who in per_who)
        self._conditions = rules

    def compiled_rule(
        self, object_type: str, criteria_and: _Criteria, criteria_or: _Criteria
    ) -> tuple[bool, Rule | None]:
        """(known, rule) for one condition as `read_constraint` reads it: the `Rule` this policy compiled for it
        (None: it can match nothing), or (False, None) for a condition no grant of this policy uses."""
        key = (object_type, criteria_and, criteria_or)
        conditions = self._conditions
        return (True, conditions[key]) if key in conditions else (False, None)

    # -- buckets ------------------------------------------------------------------------
    def _key(self, principal: Principal, object_type: str, method: str) -> tuple[Any, ...]:
        users = self._users
        return (
            principal.roles,
            principal.mfa,
            principal.user_id if users and principal.user_id in users else None,
            object_type,
            method,
        )

    def _bucket(self, principal: Principal, object_type: str, method: str) -> _Bucket:
        key = self._key(principal, object_type, method)
        bucket = self._cache.get(key)
        return self._miss(key) if bucket is None else bucket

    def _miss(self, key: tuple[Any, ...]) -> _Bucket:
        roles, mfa, user, object_type, method = key
        bucket = self._build(roles, mfa, user, object_type, str(method).upper())
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[key] = bucket
        return bucket

    def _grants(
        self, roles: tuple[str, ...], mfa: bool, user: str | None, object_type: str, method: str
    ) -> list[Grants]:
        """The grants a principal's decisions test: its roles' (MFA-only roles only with MFA; the default role for
        a principal without roles) and its own user permissions."""
        if not roles and self.default_user_role_name:
            roles = (self.default_user_role_name,)
        per_role = self._by_role.get((object_type, method), {})
        found = [
            per_role[role] for role in dict.fromkeys(roles) if role in per_role and (mfa or role not in self.mfa_roles)
        ]
        own = self._by_user.get((object_type, method), {}).get(user, None) if user is not None else None
        return found if own is None else [*found, own]

    def _build(self, roles: tuple[str, ...], mfa: bool, user: str | None, object_type: str, method: str) -> _Bucket:
        entries = [entry for grants in self._grants(roles, mfa, user, object_type, method) for entry in grants]
        if not entries:
            return _NOTHING
        allow = {r.index: r for r, deny in entries if not deny}
        deny = {r.index: r for r, deny in entries if deny}
        return _Bucket(allow.values(), deny.values())

    def cache_clear(self) -> None:
        """Drop the cached buckets and plans (they are rebuilt on demand)."""
        self._cache.clear()
        self._plans.clear()

    # -- decisions ------------------------------------------------------------------------
    def is_allowed(self, principal: Principal, object_type: str, attributes: Mapping[str, Any], method: str) -> bool:
        """Tier 2: may `principal` use `method` on the object of `object_type` with these attributes?"""
        # _bucket() inlined: this is the hot path.
        users = self._users
        key = (
            principal.roles,
            principal.mfa,
            principal.user_id if users and principal.user_id in users else None,
            object_type,
            method,
        )
        bucket = self._cache.get(key)
        if bucket is None:
            bucket = self._miss(key)
        return bucket.decide(attributes)

    def route_allowed(self, principal: Principal, path: str, method: str, *, object_type: str = "api") -> bool:
        """Tier 1: may `principal` call `method` on the concrete `path` (`object_type="web"` for web routes)."""
        return self._bucket(principal, object_type, method).decide({"route__path": path})

    def filter_allowed(self, principal: Principal, object_type: str, objects: Iterable[_M], method: str) -> list[_M]:
        """The objects (attribute mappings) `principal` may use `method` on, in their original order."""
        bucket = self._bucket(principal, object_type, method)
        if bucket.allow.empty:
            return []
        decide = bucket.decide
        return [o for o in objects if decide(o)]

    def allowed_flags(
        self, principal: Principal, object_type: str, objects: Sequence[Mapping[str, Any]], method: str
    ) -> list[bool]:
        """One decision per object, in order (for callers that filter richer items by their attributes)."""
        bucket = self._bucket(principal, object_type, method)
        if bucket.allow.empty:
            return [False] * len(objects)
        decide = bucket.decide
        return [decide(o) for o in objects]

    def plan_of(
        self,
        principal: Principal,
        object_type: str,
        method: str,
        state: Callable[[Sequence[Grants]], _P],
    ) -> _P:
        """`state(grants)` of one principal, object type and method — the grants whose rules its decisions test
        (MFA roles, the default role and user permissions applied) — kept per subject as the decisions' rules
        are, so a query plan is stated once per subject and policy version (without building the decision
        index: a plan does not need it)."""
        key = self._key(principal, object_type, method)
        found = self._plans.get(key)
        if found is None:
            found = (state(self._grants(key[0], key[1], key[2], object_type, method.upper())),)
            if len(self._plans) >= self.cache_size:
                self._plans.clear()
            self._plans[key] = found
        return cast("_P", found[0])

    def decider(self, principal: Principal, object_type: str, method: str) -> CriterionTest:
        """`attributes -> allowed?` for one principal, object type and method: `is_allowed` with the lookup of
        the principal's rules done once (a batch asks one subject about many objects)."""
        return self._bucket(principal, object_type, method).decide

    def allowed_methods(self, principal: Principal, object_type: str, attributes: Mapping[str, Any]) -> list[str]:
        """The HTTP methods (of GET, PUT, POST, DELETE) `principal` may use on this object."""
        return [m for m in PERMISSIONS if self._bucket(principal, object_type, m).decide(attributes)]

    def matched(
        self, principal: Principal, object_type: str, attributes: Mapping[str, Any], method: str
    ) -> tuple[bool, bool]:
        """(some allow rule of this principal matches, some deny rule matches): the parts of a decision."""
        bucket = self._bucket(principal, object_type, method)
        return bucket.allow.match(attributes), bucket.deny.match(attributes)

    def candidates(self, principal: Principal, object_type: str, attributes: Mapping[str, Any], method: str) -> int:
        """How many rules one decision would test at most (for tests and the benchmark: the index at work)."""
        bucket = self._bucket(principal, object_type, method)
        return sum(1 for _ in bucket.allow.candidates(attributes)) + sum(1 for _ in bucket.deny.candidates(attributes))


def compile_policy(
    constraints: Iterable[ConstraintSource],
    roles: Mapping[str, bool] | None = None,
    *,
    default_user_role_name: str | None = None,
) -> CompiledPolicy:
    """Compile a policy version: `roles` maps role name -> mfaRequired."""
    return CompiledPolicy(constraints, roles, default_user_role_name=default_user_role_name)
