"""Behaviour of the policy evaluator, rule by rule; every decision is also checked against the reference."""

from __future__ import annotations

import pytest

from backends.local.policy import CompiledPolicy, compile_policy
from pluginsdk.models import Constraint
from pluginsdk.principal import Principal

from .helpers import Both, constraint, crit, who

DB = "database"


def db(value: str) -> dict[str, str]:
    return {"databaseId": value}


# -- values are literal text with `*` --------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        ("db.1", "db.1", True),
        ("db.1", "dbX1", False),
        (".*", "db1", False),
        (".*", ".*", True),
        ("[", "[", True),
        ("[", "db1", False),
        ("db[0-9]", "db1", False),
        ("db(1|2)", "db2", False),
        ("o'brien", "o'brien", True),
        ('say "hi"', 'say "hi"', True),
        ("a,b", "a,b", True),
        ("a,b", "a", False),
        ("c1", "c10", False),
        ("c1", "C1", False),
        ("db*", "db10", True),
        ("*", "", True),
    ],
)
def test_equals_is_literal_with_star(value: str, target: str, expected: bool) -> None:
    both = Both([constraint(DB, and_=[crit("databaseId", "equals", value)], allow={"r": "GET"})])
    assert both.allowed(who("r"), DB, db(target)) is expected


def test_an_apostrophe_in_one_constraint_does_not_break_the_role() -> None:
    both = Both(
        [
            constraint(DB, and_=[crit("databaseId", "equals", "it's")], allow={"r": "GET"}),
            constraint(DB, and_=[crit("databaseId", "equals", "db1")], allow={"r": "GET"}),
        ]
    )
    assert both.allowed(who("r"), DB, db("db1"))
    assert both.allowed(who("r"), DB, db("it's"))
    assert not both.allowed(who("r"), DB, db("db2"))


@pytest.mark.parametrize(
    "crafted",
    [
        "x') || true || ('",
        "x', '.*",
        'x", "*',
        "x) or (1=1",
        "nothing,",
        " , ",
    ],
)
def test_a_crafted_is_one_of_value_grants_nothing_extra(crafted: str) -> None:
    both = Both([constraint(DB, and_=[crit("databaseId", "is_one_of", crafted)], allow={"r": "GET"})])
    for target in ("db1", "anything", "", ".*"):
        assert not both.allowed(who("r"), DB, db(target))


def test_operators() -> None:
    cases = {
        ("equals", "proj-a"): {"proj-a": True, "proj-ab": False},
        ("contains", "secret"): {"top-secret-x": True, "secret": True, "secre": False},
        ("does_not_contain", "secret"): {"top-secret-x": False, "public": True},
        ("starts_with", "proj-"): {"proj-a": True, "xproj-a": False},
        ("ends_with", ".png"): {"a.png": True, "a.pngx": False, "apng": False},
        ("is_one_of", "a,b*, c"): {"a": True, "bz": True, "c": True, "d": False, " c": False},
        ("is_not_one_of", "a,b*"): {"a": False, "bz": False, "c": True},
        ("contains", "a*c"): {"xxabcxx": True, "xxacxx": True, "xxcaxx": False},
        ("starts_with", "x.y"): {"x.yz": True, "xzyz": False},
    }
    for (op, value), expectations in cases.items():
        both = Both([constraint("asset", and_=[crit("assetName", op, value)], allow={"r": "GET"})])
        for name, expected in expectations.items():
            assert both.allowed(who("r"), "asset", {"assetName": name}) is expected, (op, value, name)


# -- list-valued fields ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "value", "tags", "expected"),
    [
        ("contains", "conf", ["public", "confidential"], True),
        ("contains", "conf", ["public"], False),
        ("equals", "red", ["blue", "red"], True),
        ("equals", "red", ["blue", "reddish"], False),
        ("equals", "red", [], False),
        ("does_not_contain", "secret", ["public", "open"], True),
        ("does_not_contain", "secret", ["public", "top-secret"], False),
        ("does_not_contain", "secret", [], True),
        ("is_one_of", "a,b", ["x", "b"], True),
        ("is_one_of", "a,b", ["x", "y"], False),
        ("is_not_one_of", "a,b", ["x", "y"], True),
        ("is_not_one_of", "a,b", ["x", "a"], False),
        ("starts_with", "team-", ("ops", "team-1"), True),
    ],
)
def test_list_valued_tags(op: str, value: str, tags: list[str], expected: bool) -> None:
    both = Both([constraint("asset", and_=[crit("tags", op, value)], allow={"r": "GET"})])
    assert both.allowed(who("r"), "asset", {"assetName": "a", "tags": tags}) is expected


def test_a_missing_attribute_matches_no_positive_criterion() -> None:
    both = Both(
        [
            constraint("asset", and_=[crit("tags", "equals", "*")], allow={"r": "GET"}),
            constraint("asset", and_=[crit("assetType", "does_not_contain", "x")], allow={"s": "GET"}),
        ]
    )
    assert not both.allowed(who("r"), "asset", {"assetName": "a"})
    assert both.allowed(who("r"), "asset", {"assetName": "a", "tags": ["t"]})
    assert both.allowed(who("s"), "asset", {"assetName": "a"})  # nothing there contains "x"


# -- criteria combination ------------------------------------------------------------------------
def test_criteria_and_and_or_are_one_conjunction() -> None:
    c = constraint(
        "asset",
        and_=[crit("databaseId", "equals", "db1"), crit("assetType", "equals", "image")],
        or_=[crit("assetName", "starts_with", "a"), crit("tags", "contains", "ok")],
        allow={"r": "GET"},
    )
    both = Both([c])
    base = {"databaseId": "db1", "assetType": "image"}
    assert both.allowed(who("r"), "asset", {**base, "assetName": "a1"})
    assert both.allowed(who("r"), "asset", {**base, "assetName": "b1", "tags": ["ok"]})
    assert not both.allowed(who("r"), "asset", {**base, "assetName": "b1", "tags": []})
    assert not both.allowed(who("r"), "asset", {**base, "databaseId": "db2", "assetName": "a1"})
    assert not both.allowed(who("r"), "asset", {**base, "assetType": "video", "assetName": "a1"})


def test_only_or() -> None:
    both = Both(
        [
            constraint(
                DB, or_=[crit("databaseId", "equals", "db1"), crit("databaseId", "equals", "db2")], allow={"r": "GET"}
            )
        ]
    )
    assert both.allowed(who("r"), DB, db("db1"))
    assert both.allowed(who("r"), DB, db("db2"))
    assert not both.allowed(who("r"), DB, db("db3"))


def test_unknown_fields_are_ignored_at_evaluation() -> None:
    both = Both(
        [
            constraint(
                DB,
                and_=[crit("legacyField", "equals", "nope"), crit("databaseId", "equals", "db1")],
                allow={"r": "GET"},
            )
        ]
    )
    assert both.allowed(who("r"), DB, {"databaseId": "db1"})
    assert not both.allowed(who("r"), DB, {"databaseId": "db2", "legacyField": "nope"})


@pytest.mark.parametrize(
    ("and_", "or_"),
    [
        ([crit("legacyField", "equals", "*")], []),
        ([], [crit("legacyField", "equals", "*")]),
        ([crit("legacyField", "equals", "*")], [crit("databaseId", "equals", "*")]),
        ([crit("databaseId", "equals", "*")], [crit("legacyField", "equals", "*")]),
        ([crit("databaseId", "regex", "*")], []),
        ([], []),
    ],
)
def test_a_criterion_set_that_becomes_empty_matches_nothing(
    and_: list[dict[str, str]], or_: list[dict[str, str]]
) -> None:
    both = Both([constraint(DB, and_=and_, or_=or_, allow={"r": "GET"})])
    assert not both.allowed(who("r"), DB, {"databaseId": "db1", "legacyField": "x"})


def test_an_ignored_deny_never_widens_but_an_ignored_allow_grants_nothing() -> None:
    both = Both(
        [
            constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"r": "GET"}),
            constraint(DB, and_=[crit("legacyField", "equals", "*")], deny={"r": "GET"}),
        ]
    )
    assert both.allowed(who("r"), DB, db("db1"))  # the unusable deny matches nothing


def test_unknown_object_type_grants_nothing() -> None:
    both = Both([constraint("spaceship", and_=[crit("databaseId", "equals", "*")], allow={"r": "GET"})])
    assert not both.allowed(who("r"), "spaceship", db("db1"))


# -- effective decision ---------------------------------------------------------------------------
def test_no_allow_means_deny() -> None:
    both = Both([constraint(DB, and_=[crit("databaseId", "equals", "db1")], allow={"r": "GET"})])
    assert not both.allowed(who("r"), DB, db("db2"))
    assert not both.allowed(who("other"), DB, db("db1"))
    assert not both.allowed(who("r"), "asset", db("db1"))


def test_methods_are_separate_and_case_insensitive() -> None:
    both = Both([constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"r": "GET POST"})])
    assert both.allowed(who("r"), DB, db("x"), "GET")
    assert both.allowed(who("r"), DB, db("x"), "get")
    assert both.allowed(who("r"), DB, db("x"), "POST")
    assert not both.allowed(who("r"), DB, db("x"), "PUT")
    assert not both.allowed(who("r"), DB, db("x"), "DELETE")
    assert not both.allowed(who("r"), DB, db("x"), "PATCH")


def test_deny_overrides_allow_across_roles() -> None:
    both = Both(
        [
            constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"reader": "GET PUT"}),
            constraint(DB, and_=[crit("databaseId", "equals", "secret*")], deny={"contractor": "GET"}),
        ]
    )
    assert both.allowed(who("reader"), DB, db("secret-1"))
    assert not both.allowed(who("reader", "contractor"), DB, db("secret-1"))
    assert not both.allowed(who("contractor", "reader"), DB, db("secret-1"))
    assert both.allowed(who("reader", "contractor"), DB, db("public"))
    assert both.allowed(who("reader", "contractor"), DB, db("secret-1"), "PUT")  # deny names GET only
    assert not both.allowed(who("contractor"), DB, db("public"))  # a deny alone grants nothing


def test_one_constraint_can_allow_one_role_and_deny_another() -> None:
    c = constraint(DB, and_=[crit("databaseId", "equals", "db1")], allow={"a": "GET"}, deny={"b": "GET"})
    both = Both([c])
    assert both.allowed(who("a"), DB, db("db1"))
    assert not both.allowed(who("a", "b"), DB, db("db1"))


def test_mfa_required_roles_apply_only_to_mfa_sessions() -> None:
    roles = {"admin": False, "sensitive": True, "lockdown": True}
    both = Both(
        [
            constraint(DB, and_=[crit("databaseId", "equals", "vault")], allow={"sensitive": "GET"}),
            constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"admin": "GET"}),
            constraint(DB, and_=[crit("databaseId", "equals", "prod*")], deny={"lockdown": "GET"}),
        ],
        roles,
    )
    assert not both.allowed(who("sensitive", mfa=False), DB, db("vault"))
    assert both.allowed(who("sensitive", mfa=True), DB, db("vault"))
    # The MFA role's deny also applies only in MFA sessions.
    assert both.allowed(who("admin", "lockdown", mfa=False), DB, db("prod-1"))
    assert not both.allowed(who("admin", "lockdown", mfa=True), DB, db("prod-1"))
    assert both.allowed(who("admin", "lockdown", mfa=True), DB, db("dev-1"))


def test_zero_role_users_and_the_default_role() -> None:
    cs = [constraint("api", and_=[crit("route__path", "equals", "/auth/routes")], allow={"basic": "GET"})]
    without = Both(cs)
    with_default = Both(cs, default_user_role_name="basic")
    nobody = who()
    assert not without.route(nobody, "/auth/routes")
    assert with_default.route(nobody, "/auth/routes")
    assert not with_default.route(nobody, "/auth/routes", "POST")
    # A principal that has roles does not also get the default one.
    assert not with_default.route(who("other"), "/auth/routes")


def test_default_role_that_requires_mfa() -> None:
    cs = [constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"basic": "GET"})]
    both = Both(cs, {"basic": True}, default_user_role_name="basic")
    assert not both.allowed(who(), DB, db("x"))
    assert both.allowed(who(mfa=True), DB, db("x"))


def test_user_permissions() -> None:
    both = Both(
        [
            constraint(DB, and_=[crit("databaseId", "equals", "db1")], user_allow={"alice": "GET"}),
            constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"staff": "GET"}),
            constraint(DB, and_=[crit("databaseId", "equals", "hr")], user_deny={"bob": "GET"}),
        ]
    )
    assert both.allowed(who(user="alice"), DB, db("db1"))
    assert not both.allowed(who(user="alice"), DB, db("db2"))
    assert not both.allowed(who(user="carol"), DB, db("db1"))
    assert not both.allowed(who(user="alice1"), DB, db("db1"))  # no prefix matching of ids
    assert both.allowed(who("staff", user="bob"), DB, db("db1"))
    assert not both.allowed(who("staff", user="bob"), DB, db("hr"))
    assert both.allowed(who("staff", user="carol"), DB, db("hr"))


def test_role_and_user_names_are_exact() -> None:
    both = Both([constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"c1": "GET"})])
    assert both.allowed(who("c1"), DB, db("x"))
    assert not both.allowed(who("c10"), DB, db("x"))
    assert not both.allowed(who("C1"), DB, db("x"))


# -- tier 1 ---------------------------------------------------------------------------------------
def test_routes_match_the_concrete_path() -> None:
    both = Both(
        [
            constraint(
                "api",
                or_=[
                    crit("route__path", "equals", "/auth/constraints"),
                    crit("route__path", "equals", "/auth/constraints/c1"),
                    crit("route__path", "starts_with", "/api/v1/templates"),
                ],
                allow={"r": "GET"},
            ),
            constraint("api", and_=[crit("route__path", "equals", "/auth/api-keys*")], allow={"admin": "GET POST"}),
            constraint("api", and_=[crit("route__path", "equals", "/api/v1/requests/*/status")], allow={"r": "GET"}),
        ]
    )
    r = who("r")
    assert both.route(r, "/auth/constraints")
    assert both.route(r, "/auth/constraints/c1")
    assert not both.route(r, "/auth/constraints/c10")
    assert not both.route(r, "/auth/constraints/c")
    assert both.route(r, "/api/v1/templates/t-1")
    assert both.route(r, "/api/v1/requests/req-1/status")
    assert not both.route(r, "/api/v1/requests/req-1")
    assert not both.route(r, "/auth/api-keys")
    assert both.route(who("admin"), "/auth/api-keys/k1", "POST")
    assert not both.route(r, "/auth/constraints", "DELETE")


def test_web_routes_are_their_own_object_type() -> None:
    policy = CompiledPolicy(
        [constraint("web", and_=[crit("route__path", "equals", "/assets*")], allow={"r": "GET"})],
    )
    assert policy.route_allowed(who("r"), "/assets/x", "GET", object_type="web")
    assert not policy.route_allowed(who("r"), "/assets/x", "GET")  # not an api grant
    assert policy.is_allowed(who("r"), "web", {"route__path": "/assets"}, "GET")


# -- API surface ------------------------------------------------------------------------------
def test_filter_allowed_keeps_order_and_objects() -> None:
    policy = compile_policy(
        [constraint(DB, and_=[crit("databaseId", "starts_with", "ok")], allow={"r": "GET"})],
        {"r": False},
    )
    objs = [db("ok1"), db("no"), db("ok2"), {"databaseId": None}, {}]
    assert policy.filter_allowed(who("r"), DB, objs, "GET") == [objs[0], objs[2]]
    assert policy.filter_allowed(who("r"), DB, iter(objs), "GET")[1] is objs[2]
    assert policy.filter_allowed(who("x"), DB, objs, "GET") == []
    assert policy.allowed_flags(who("r"), DB, objs, "GET") == [True, False, True, False, False]
    assert policy.allowed_flags(who("x"), DB, objs, "GET") == [False] * 5


def test_allowed_methods() -> None:
    policy = compile_policy(
        [
            constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"r": "GET PUT DELETE"}),
            constraint(DB, and_=[crit("databaseId", "equals", "keep")], deny={"r": "DELETE"}),
        ]
    )
    assert policy.allowed_methods(who("r"), DB, db("x")) == ["GET", "PUT", "DELETE"]
    assert policy.allowed_methods(who("r"), DB, db("keep")) == ["GET", "PUT"]


def test_accepts_models_and_snake_case_dicts() -> None:
    wire = constraint(DB, and_=[crit("databaseId", "equals", "db1")], allow={"r": "GET"}, user_allow={"bob": "PUT"})
    model = Constraint.model_validate(wire)
    snake = model.to_dict()
    assert "criteria_and" in snake
    for source in (wire, model, snake):
        policy = CompiledPolicy([source])
        assert policy.is_allowed(who("r"), DB, db("db1"), "GET")
        assert not policy.is_allowed(who("r"), DB, db("db2"), "GET")
        assert policy.is_allowed(who(user="bob"), DB, db("db1"), "PUT")


def test_stored_permissions_in_other_case_still_count() -> None:
    c = constraint(DB, and_=[crit("databaseId", "equals", "*")])
    c["groupPermissions"] = [
        {"groupId": "r", "permission": "get", "permissionType": "Allow"},
        {"groupId": "r", "permission": "GET", "permissionType": "DENY"},
        {"groupId": "s", "permission": "GET", "permissionType": "maybe"},
    ]
    both = Both([c, constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={"s": "GET"})])
    assert not both.allowed(who("r"), DB, db("x"))
    assert both.allowed(who("s"), DB, db("x"))


def test_non_string_attribute_values_are_compared_as_text() -> None:
    both = Both([constraint("request", and_=[crit("templateId", "equals", "42")], allow={"r": "GET"})])
    assert both.allowed(who("r"), "request", {"templateId": 42})
    assert not both.allowed(who("r"), "request", {"templateId": 420})


# -- the index at work -------------------------------------------------------------------------
def test_a_decision_tests_only_the_rules_its_guards_hit() -> None:
    cs = [
        constraint("api", and_=[crit("route__path", "equals", f"/api/v1/things/{i}/*")], allow={"r": "GET"})
        for i in range(2000)
    ]
    cs += [constraint(DB, and_=[crit("databaseId", "equals", f"db{i}")], allow={"r": "GET"}) for i in range(2000)]
    policy = CompiledPolicy(cs)
    assert policy.route_allowed(who("r"), "/api/v1/things/1234/x", "GET")
    assert not policy.route_allowed(who("r"), "/api/v1/things/12345/x", "GET")
    assert policy.candidates(who("r"), "api", {"route__path": "/api/v1/things/1234/x"}, "GET") < 20
    assert policy.candidates(who("r"), DB, db("db1234"), "GET") == 1
    assert policy.is_allowed(who("r"), DB, db("db1234"), "GET")
    assert not policy.is_allowed(who("r"), DB, db("db12345"), "GET")


def test_the_bucket_cache_is_bounded_and_consistent() -> None:
    cs = [constraint(DB, and_=[crit("databaseId", "equals", "*")], allow={f"r{i}": "GET"}) for i in range(50)]
    policy = CompiledPolicy(cs, cache_size=8)
    for _ in range(3):
        for i in range(50):
            assert policy.is_allowed(Principal(user_id="u", roles=(f"r{i}",)), DB, db("x"), "GET")
            assert not policy.is_allowed(Principal(user_id="u", roles=(f"x{i}",)), DB, db("x"), "GET")
    assert len(policy._cache) <= 8
    policy.cache_clear()
    assert policy.is_allowed(who("r3"), DB, db("x"), "GET")


def test_nested_prefixes_and_long_prefixes() -> None:
    long = "/x" * 40  # 80 characters: the index keys only the first 64
    both = Both(
        [
            constraint("api", and_=[crit("route__path", "starts_with", "/a")], allow={"r": "GET"}),
            constraint("api", and_=[crit("route__path", "equals", "/a/b*")], deny={"r": "GET"}),
            constraint("api", and_=[crit("route__path", "equals", "/a/bc*")], allow={"s": "GET"}),
            constraint("api", and_=[crit("route__path", "equals", "/a/b*/end")], allow={"s": "GET"}),
            constraint("api", and_=[crit("route__path", "equals", long + "*")], allow={"t": "GET"}),
        ]
    )
    r, s, t = who("r"), who("s"), who("t")
    assert both.route(r, "/a")
    assert both.route(r, "/a/c")
    assert not both.route(r, "/a/b")
    assert not both.route(r, "/a/bz")
    assert both.route(s, "/a/bcd")
    assert both.route(s, "/a/bz/end")
    assert not both.route(s, "/a/bz/en")
    assert not both.route(s, "/a/b")
    assert both.route(t, long)
    assert both.route(t, long + "/more")
    assert not both.route(t, long[:-1] + "y")
    assert not both.route(t, long[:64])


def test_guarded_alternatives() -> None:
    both = Both(
        [
            constraint(DB, and_=[crit("databaseId", "is_one_of", "db1, db2*, x*y")], allow={"r": "GET"}),
            constraint(
                "asset",
                or_=[crit("databaseId", "equals", "d1"), crit("assetName", "starts_with", "n")],
                allow={"r": "GET"},
            ),
            constraint(
                "asset",
                and_=[crit("tags", "equals", "blocked")],
                or_=[crit("assetType", "equals", "a"), crit("assetType", "equals", "b")],
                deny={"r": "GET"},
            ),
        ]
    )
    r = who("r")
    for value, expected in {
        "db1": True,
        "db2": True,
        "db20": True,
        "db3": False,
        "xzy": True,
        "xy": True,
        "x": False,
    }.items():
        assert both.allowed(r, DB, db(value)) is expected, value
    assert both.allowed(r, "asset", {"databaseId": "d1"})
    assert both.allowed(r, "asset", {"databaseId": "d2", "assetName": "nn"})
    assert not both.allowed(r, "asset", {"databaseId": "d2", "assetName": "mm"})
    assert not both.allowed(r, "asset", {"databaseId": "d1", "tags": ["x", "blocked"], "assetType": "b"})
    assert both.allowed(r, "asset", {"databaseId": "d1", "tags": ["x", "blocked"], "assetType": "c"})
