"""Property tests of the decision point: explanations name what really decided, what-if equals re-evaluation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.local.policy.decision_point import PolicyModel, Question, diff_models
from backends.local.policy.evaluator import CompiledPolicy, read_constraint
from pluginsdk.principal import Principal
from tests.policy.test_properties import METHODS, ROLES, USERS, assets, constraints, principals
from tests.support.reference_policy import ReferencePolicy, constraint_matches

_Reasons = list[tuple[str, str]]


def _with_ids(cs: list[dict[str, Any]], prefix: str = "c") -> list[dict[str, Any]]:
    return [{**c, "constraintId": f"{prefix}{i}"} for i, c in enumerate(cs)]


# 3x the most examples an MFA-only role counted without MFA took to fail it (planted bugs: docs/benchmarks.md).
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cs=st.lists(constraints(), max_size=8),
    mfa_roles=st.sets(st.sampled_from(ROLES)),
    principal=principals,
    attrs=assets,
    method=st.sampled_from(METHODS),
)
def test_explain_names_exactly_what_decided(
    cs: list[dict[str, Any]], mfa_roles: set[str], principal: Principal, attrs: dict[str, Any], method: str
) -> None:
    cs = _with_ids(cs)
    roles = {r: r in mfa_roles for r in ROLES}
    model = PolicyModel(cs, roles)
    object_type = "asset"
    e = model.explain(principal, object_type, attrs, method)
    assert e.allowed == model.policy.is_allowed(principal, object_type, attrs, method)
    skipped = {r for r, _ in e.skipped}
    assert skipped == {r for r in principal.roles if roles[r] and not principal.mfa}

    def without(ids: set[str]) -> bool:
        rest = [c for c in cs if c["constraintId"] not in ids]
        return ReferencePolicy(rest, roles).is_allowed(principal, object_type, attrs, method)

    allow_ids = {c for c, _ in e.allowed_by}
    deny_ids = {c for c, _ in e.denied_by}
    if e.allowed:
        assert allow_ids and not deny_ids
        assert not without(allow_ids)  # removing the allowed-by constraints flips the decision
    elif allow_ids and deny_ids and not allow_ids & deny_ids:
        assert without(deny_ids)  # removing the denying constraints flips it back to allow
    if not allow_ids:
        assert not without(set())


def _walk_every_grant(
    cs: list[dict[str, Any]], roles: dict[str, bool], p: Principal, object_type: str, attrs: dict[str, Any], method: str
) -> tuple[_Reasons, _Reasons, list[str]]:
    """The oracle: every constraint of every grant of the subject tested on its own (the explain of before
    the per-grant guard indexes, matching by the reference policy): (allowed by, denied by, roles that count)."""
    active = [r for r in dict.fromkeys(p.roles) if r in roles and (p.mfa or not roles[r])]
    vias = [f"role:{r}" for r in active] + ([f"user:{p.user_id}"] if p.user_id else [])
    hits: set[tuple[int, str, str, str]] = set()
    for position, c in enumerate(cs):
        c_type, c_and, c_or, group_perms, user_perms = read_constraint(c)
        if c_type != object_type or not constraint_matches(c_type, c_and, c_or, attrs):
            continue
        for prefix, perms in (("role:", group_perms), ("user:", user_perms)):
            for who, m, kind in perms:
                if m == method and prefix + who in vias and kind in ("allow", "deny"):
                    hits.add((position, c["constraintId"], prefix + who, kind))
    ordered = sorted(hits)  # constraint order, then grant
    allowed = [(cid, via) for _, cid, via, kind in ordered if kind == "allow"]
    return allowed, [(cid, via) for _, cid, via, kind in ordered if kind == "deny"], active


# 3x the most examples an MFA-only role counted without MFA took to fail it (planted bugs: docs/benchmarks.md).
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cs=st.lists(constraints(), max_size=10),
    repeated=st.integers(0, 3),
    mfa_roles=st.sets(st.sampled_from(ROLES)),
    missing_role=st.booleans(),
    principal=principals,
    attrs=assets,
    object_type=st.sampled_from(("asset", "api", "spaceship")),
    method=st.sampled_from(METHODS),
)
def test_explain_equals_a_walk_of_every_grant(
    cs: list[dict[str, Any]],
    repeated: int,
    mfa_roles: set[str],
    missing_role: bool,
    principal: Principal,
    attrs: dict[str, Any],
    object_type: str,
    method: str,
) -> None:
    """The guard indexes find exactly the constraints a brute-force walk finds, in the same order: list
    attributes hitting one rule twice, prefix and unguarded rules, one condition in several constraints,
    user permissions, MFA-skipped and unknown roles; through the policy's rules, rules compiled by the model
    (a policy that does not know the condition) and a reassigned model sharing the indexes."""
    cs = _with_ids(cs + cs[:repeated])  # repeated conditions: one rule behind several constraints
    roles = {r: r in mfa_roles for r in ROLES[: 3 if missing_role else 4]}
    allowed_by, denied_by, active = _walk_every_grant(cs, roles, principal, object_type, attrs, method)
    model = PolicyModel(cs, roles)
    partial = PolicyModel(cs, roles, policy=CompiledPolicy(cs[: len(cs) // 2], roles))
    for m in (model, model.reassigned({"u9": ["r0"]}), partial):
        e = m.explain(principal, object_type, attrs, method)
        assert (e.allowed_by, e.denied_by, list(e.roles)) == (allowed_by, denied_by, active)
        assert e.allowed == (bool(allowed_by) and not denied_by)
    known = Principal(principal.user_id, tuple(r for r in principal.roles if r in roles), principal.mfa)
    assert model.policy.is_allowed(known, object_type, attrs, method) == (bool(allowed_by) and not denied_by)


# 3x the most examples a what-if ignoring deletions took to fail it (planted bugs: docs/benchmarks.md).
@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cs=st.lists(constraints(), max_size=6),
    added=st.lists(constraints(), max_size=4),
    deleted=st.sets(st.integers(0, 5)),
    mfa_roles=st.sets(st.sampled_from(ROLES)),
    flipped=st.sets(st.sampled_from(ROLES)),
    assignments=st.dictionaries(st.sampled_from(USERS), st.lists(st.sampled_from(ROLES), max_size=2), max_size=3),
    moved=st.dictionaries(st.sampled_from(USERS), st.lists(st.sampled_from(ROLES), max_size=2), max_size=2),
    objects=st.lists(assets, min_size=1, max_size=3),
)
def test_what_if_equals_evaluating_the_candidate(
    cs: list[dict[str, Any]],
    added: list[dict[str, Any]],
    deleted: set[int],
    mfa_roles: set[str],
    flipped: set[str],
    assignments: dict[str, list[str]],
    moved: dict[str, list[str]],
    objects: list[dict[str, Any]],
) -> None:
    cs = _with_ids(cs)
    new = _with_ids(added, "c")  # ids c0.. replace existing ones, the rest are new
    roles = {r: r in mfa_roles for r in ROLES}
    before = PolicyModel(cs, roles, assignments)
    delete = {f"c{i}" for i in deleted}
    after = before.candidate(add=new, delete=delete, role_mfa={r: not roles[r] for r in flipped}, user_roles=moved)
    questions = [Question("object", "asset", o, m, repr(o)) for o in objects for m in METHODS]
    questions += [Question("route", "api", {"route__path": p}, "GET", p) for p in ("a", "b.a", "ab")]
    diff = diff_models(before, after, questions)
    changes = diff.changes
    got = {(s, q.target, q.method, b, a) for s, q, b, a in changes}
    assert (diff.allowed_to_denied, diff.denied_to_allowed) == (
        sum(b and not a for *_, b, a in changes),
        sum(a and not b for *_, b, a in changes),
    )
    kept = diff_models(before, after, questions, keep=1)  # counts stay complete past what is kept
    assert kept.changes == changes[:1] and kept[1:] == diff[1:]

    # The candidate stated directly, evaluated by the reference evaluator.
    ids_new = {c["constraintId"] for c in new}
    direct_cs = [c for c in cs if c["constraintId"] not in delete | ids_new] + new
    direct_roles = {r: (not roles[r]) if r in flipped else roles[r] for r in ROLES}
    direct_assign = {**assignments, **moved}
    old_ref, new_ref = ReferencePolicy(cs, roles), ReferencePolicy(direct_cs, direct_roles)
    want = set()
    subjects: list[tuple[str, Principal, Principal]] = []
    known = set(before.users()) | set(after.users())
    for u in sorted(known):
        subjects.append(
            (f"user:{u}", Principal(u, tuple(assignments.get(u, ()))), Principal(u, tuple(direct_assign.get(u, ()))))
        )
    for r in ROLES:
        subjects.append((f"role:{r}", Principal("", (r,), mfa=True), Principal("", (r,), mfa=True)))
    for name, pb, pa in subjects:
        for q in questions:
            b = old_ref.is_allowed(pb, q.object_type, q.attributes, q.method)
            a = new_ref.is_allowed(pa, q.object_type, q.attributes, q.method)
            if a != b:
                want.add((name, q.target, q.method, b, a))
    assert got == want


def _c(cid: str, and_: list[tuple[str, str, str]], or_: list[tuple[str, str, str]], **grants: str) -> dict[str, Any]:
    """A constraint on assets: criteria as (field, operator, value); grants as `role_or_user="METHOD:kind"`."""
    crit = [[{"field": f, "operator": o, "value": v} for f, o, v in cs] for cs in (and_, or_)]
    perms: dict[str, list[dict[str, str]]] = {"groupPermissions": [], "userPermissions": []}
    for who, spec in grants.items():
        method, kind = spec.split(":")
        key, id_key = ("userPermissions", "userId") if who.startswith("u") else ("groupPermissions", "groupId")
        perms[key].append({id_key: who, "permission": method, "permissionType": kind})
    return {"constraintId": cid, "objectType": "asset", "criteriaAnd": crit[0], "criteriaOr": crit[1], **perms}


_EDGE_POLICY = [
    _c("two-criteria", [("databaseId", "equals", "db1"), ("assetName", "equals", "x")], [], r0="GET:allow"),
    _c("tags-or", [], [("tags", "equals", "a"), ("tags", "equals", "b")], r0="GET:allow", r1="GET:allow"),
    _c("prefix", [("assetName", "starts_with", "rep")], [], r1="GET:allow"),
    _c("unguarded", [("assetName", "does_not_contain", "secret")], [], r2="GET:deny"),
    _c("same-condition", [], [("tags", "equals", "a"), ("tags", "equals", "b")], r2="GET:allow", u0="GET:allow"),
    _c("own", [("databaseId", "equals", "db1")], [], u0="GET:deny"),
    _c("mfa-role", [("databaseId", "equals", "db1")], [], r3="GET:allow"),
]


@pytest.mark.parametrize(
    "attrs",
    [
        {"databaseId": "db1", "assetName": "y"},  # guard hit, second criterion fails
        {"databaseId": "db1", "assetName": "x", "tags": ["a", "a", "b"]},  # a list hitting one rule thrice
        {"assetName": "report", "tags": "b"},
        {"assetName": "secret report", "tags": ["c"]},
        {},
    ],
)
@pytest.mark.parametrize("mfa", [False, True])
def test_explain_edge_cases_equal_a_walk_of_every_grant(attrs: dict[str, Any], mfa: bool) -> None:
    roles = {"r0": False, "r1": False, "r2": False, "r3": True}
    principal = Principal("u0", ("r0", "r1", "r2", "r3", "gone"), mfa)
    allowed_by, denied_by, active = _walk_every_grant(_EDGE_POLICY, roles, principal, "asset", attrs, "GET")
    e = PolicyModel(_EDGE_POLICY, roles).explain(principal, "asset", attrs, "GET")
    assert (e.allowed_by, e.denied_by, list(e.roles)) == (allowed_by, denied_by, active)
    assert [r for r, _ in e.skipped] == (["r3", "gone"] if not mfa else ["gone"])
