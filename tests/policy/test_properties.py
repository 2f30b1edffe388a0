"""Property tests: the compiled evaluator decides exactly as the brute-force reference does."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.local.policy import CompiledPolicy, compile_pattern
from pluginsdk.principal import Principal
from tests.support.reference_policy import ReferencePolicy, wildcard_match

# Small alphabets so that random patterns and values actually meet; a few metacharacters and
# separators keep literal handling honest.
PATTERN_TEXT = st.text(alphabet="ab*.,' [", max_size=5)
VALUE_TEXT = st.text(alphabet="ab.,' [", max_size=6)
ROLES = ("r0", "r1", "r2", "r3")
USERS = ("u0", "u1", "u2")
OPERATORS = ("equals", "contains", "does_not_contain", "starts_with", "ends_with", "is_one_of", "is_not_one_of")
FIELDS = {
    "asset": ("databaseId", "assetName", "tags", "legacyField"),
    "api": ("route__path", "legacyField"),
}
METHODS = ("GET", "PUT")


@st.composite
def criteria(draw: st.DrawFn, object_type: str) -> dict[str, str]:
    operator = draw(
        st.sampled_from((*OPERATORS, "regex")) if draw(st.integers(0, 20)) == 0 else st.sampled_from(OPERATORS)
    )
    return {"field": draw(st.sampled_from(FIELDS[object_type])), "operator": operator, "value": draw(PATTERN_TEXT)}


@st.composite
def constraints(draw: st.DrawFn) -> dict[str, Any]:
    object_type = draw(st.sampled_from(("asset", "asset", "api", "spaceship")))
    fields_of = "asset" if object_type == "spaceship" else object_type
    perms = st.tuples(st.sampled_from(METHODS), st.sampled_from(("allow", "allow", "deny")))
    return {
        "objectType": object_type,
        "criteriaAnd": draw(st.lists(criteria(fields_of), max_size=3)),
        "criteriaOr": draw(st.lists(criteria(fields_of), max_size=3)),
        "groupPermissions": [
            {"groupId": g, "permission": m, "permissionType": t}
            for g, (m, t) in draw(st.lists(st.tuples(st.sampled_from(ROLES), perms), max_size=3))
        ],
        "userPermissions": [
            {"userId": u, "permission": m, "permissionType": t}
            for u, (m, t) in draw(st.lists(st.tuples(st.sampled_from(USERS), perms), max_size=1))
        ],
    }


principals = st.builds(
    Principal,
    user_id=st.sampled_from(USERS),
    roles=st.lists(st.sampled_from(ROLES), max_size=3).map(tuple),
    mfa=st.booleans(),
)

attribute = st.one_of(VALUE_TEXT, st.none(), st.integers(0, 3))
assets = st.fixed_dictionaries(
    {},
    optional={
        "databaseId": attribute,
        "assetName": attribute,
        "tags": st.lists(st.one_of(VALUE_TEXT, st.none()), max_size=3),
        "legacyField": VALUE_TEXT,
        "route__path": VALUE_TEXT,
    },
)


# 3x the most examples an `is_one_of` with untrimmed items took to fail it (planted bugs: docs/benchmarks.md).
@settings(max_examples=3900, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.lists(constraints(), max_size=8),
    mfa_roles=st.sets(st.sampled_from(ROLES)),
    default_role=st.one_of(st.none(), st.sampled_from(ROLES)),
    who=st.lists(principals, min_size=1, max_size=4),
    objects=st.lists(assets, min_size=1, max_size=6),
)
def test_compiled_agrees_with_reference(
    policy: list[dict[str, Any]],
    mfa_roles: set[str],
    default_role: str | None,
    who: list[Principal],
    objects: list[dict[str, Any]],
) -> None:
    roles = {r: r in mfa_roles for r in ROLES}
    compiled = CompiledPolicy(policy, roles, default_user_role_name=default_role)
    reference = ReferencePolicy(policy, roles, default_user_role_name=default_role)
    for p in who:
        for object_type in ("asset", "api", "spaceship"):
            for method in METHODS:
                for obj in objects:
                    want = reference.is_allowed(p, object_type, obj, method)
                    assert compiled.is_allowed(p, object_type, obj, method) == want, (p, object_type, obj, method)
                assert compiled.filter_allowed(p, object_type, objects, method) == reference.filter_allowed(
                    p, object_type, objects, method
                )
        path = objects[0].get("route__path")
        if isinstance(path, str):
            assert compiled.route_allowed(p, path, "GET") == reference.route_allowed(p, path, "GET")


# 3x the most examples a `*` that stops matching empty text took to fail it (planted bugs: docs/benchmarks.md).
@settings(max_examples=1500, deadline=None)
@given(pattern=PATTERN_TEXT, text=st.text(alphabet="ab*.,' [", max_size=8))
def test_compiled_patterns_agree_with_the_textbook_matcher(pattern: str, text: str) -> None:
    assert compile_pattern(pattern).matches(text) == wildcard_match(pattern, text)


@settings(max_examples=200, deadline=None)
@given(literal=st.text(max_size=8), text=st.text(max_size=8))
def test_text_without_star_matches_only_itself(literal: str, text: str) -> None:
    literal = literal.replace("*", "")
    assert compile_pattern(literal).matches(text) == (literal == text)


SEGMENTS = st.sampled_from(["/a", "/b", "/ab", "/a.b", "/", "a", "b", "*", "x,y", "'"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=5).map("".join)


@st.composite
def route_constraints(draw: st.DrawFn) -> dict[str, Any]:
    def route_crit() -> dict[str, str]:
        operator = draw(st.sampled_from(OPERATORS))
        return {"field": "route__path", "operator": operator, "value": draw(PATHS)}

    perms = st.tuples(st.sampled_from(ROLES), st.sampled_from(METHODS), st.sampled_from(("allow", "allow", "deny")))
    return {
        "objectType": "api",
        "criteriaAnd": [route_crit() for _ in range(draw(st.integers(0, 2)))],
        "criteriaOr": [route_crit() for _ in range(draw(st.integers(0, 3)))],
        "groupPermissions": [
            {"groupId": g, "permission": m, "permissionType": t}
            for g, m, t in draw(st.lists(perms, min_size=1, max_size=3))
        ],
    }


# 3x the most examples a prefix or `contains` off by one took to fail it (planted bugs: docs/benchmarks.md).
@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.lists(route_constraints(), max_size=40),
    who=st.lists(principals, min_size=1, max_size=3),
    paths=st.lists(PATHS.map(lambda p: p.replace("*", "")), min_size=1, max_size=10),
)
def test_route_policies_agree_with_reference(
    policy: list[dict[str, Any]], who: list[Principal], paths: list[str]
) -> None:
    compiled = CompiledPolicy(policy)
    reference = ReferencePolicy(policy)
    for p in who:
        for method in METHODS:
            for path in paths:
                assert compiled.route_allowed(p, path, method) == reference.route_allowed(p, path, method), (p, path)
