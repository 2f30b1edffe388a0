"""Property tests of the decision point: explanations name what really decided, what-if equals re-evaluation."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.local.policy import ReferencePolicy
from backends.local.policy.decision_point import PolicyModel, Question, diff_models
from pluginsdk.principal import Principal
from tests.policy.test_properties import METHODS, ROLES, USERS, assets, constraints, principals


def _with_ids(cs: list[dict[str, Any]], prefix: str = "c") -> list[dict[str, Any]]:
    return [{**c, "constraintId": f"{prefix}{i}"} for i, c in enumerate(cs)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    changes, _, _ = diff_models(before, after, questions)
    got = {(s, q.target, q.method, b, a) for s, q, b, a in changes}

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
