"""Property tests: a query plan, rendered as SQL (SQLite and PostgreSQL), as a SQLAlchemy expression and as a
Python predicate, selects exactly the objects the decision allows — on random policies (wildcards, lists,
absent fields, negated operators, denies, MFA roles, the default role, user permissions) and subjects."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.local.policy import CompiledPolicy
from backends.local.policy.plans import plan_access
from pluginsdk.models import AccessPlan
from pluginsdk.plans import Column, predicate, to_sql
from pluginsdk.principal import Principal
from tests.policy.test_properties import METHODS, ROLES, assets, constraints, principals
from tests.support.postgres import fresh_database

COLUMNS = {"databaseId": "database_id", "assetName": "asset_name", "tags": Column("tags", json_list=True)}
TABLE = "CREATE TABLE assets (id INTEGER PRIMARY KEY, database_id TEXT, asset_name TEXT, tags TEXT)"

policies = st.lists(constraints(), max_size=8)
subjects = st.lists(principals, min_size=1, max_size=3)
rows = st.lists(assets, min_size=1, max_size=8)
# 3x the most examples a plan dropping one-criterion denies took to fail it (planted bugs: docs/benchmarks.md).
settings_ = settings(max_examples=2700, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _text(v: Any) -> str | None:
    return None if v is None else v if isinstance(v, str) else str(v)


def _row(i: int, obj: dict[str, Any]) -> tuple[Any, ...]:
    tags = obj.get("tags")
    return (i, _text(obj.get("databaseId")), _text(obj.get("assetName")), None if tags is None else json.dumps(tags))


def _cases(
    policy: list[dict[str, Any]], mfa_roles: set[str], default_role: str | None, who: list[Principal]
) -> Iterator[tuple[CompiledPolicy, Principal, str, AccessPlan]]:
    compiled = CompiledPolicy(policy, {r: r in mfa_roles for r in ROLES}, default_user_role_name=default_role)
    for p in who:
        for method in METHODS:
            yield compiled, p, method, plan_access(compiled, p, "asset", method, 0)


@settings_
@given(
    policy=policies,
    mfa_roles=st.sets(st.sampled_from(ROLES)),
    default_role=st.one_of(st.none(), st.sampled_from(ROLES)),
    who=subjects,
    objects=rows,
)
def test_plan_on_sqlite_and_as_predicate_is_the_decision(
    policy: list[dict[str, Any]],
    mfa_roles: set[str],
    default_role: str | None,
    who: list[Principal],
    objects: list[dict[str, Any]],
) -> None:
    db = sqlite3.connect(":memory:")
    db.execute(TABLE)
    db.executemany("INSERT INTO assets VALUES (?, ?, ?, ?)", [_row(i, o) for i, o in enumerate(objects)])
    for compiled, p, method, plan in _cases(policy, mfa_roles, default_role, who):
        want = [i for i, o in enumerate(objects) if compiled.is_allowed(p, "asset", o, method)]
        allowed = predicate(plan)
        assert [i for i, o in enumerate(objects) if allowed(o)] == want, (plan, p, method)
        for style in ("named", "qmark"):
            where = to_sql(plan, COLUMNS, dialect="sqlite", paramstyle=style)
            got = [r[0] for r in db.execute(f"SELECT id FROM assets WHERE {where.sql} ORDER BY id", where.params)]
            assert got == want, (plan, where, p, method)


@pytest.fixture(scope="module")
def postgres() -> Iterator[tuple[asyncio.AbstractEventLoop, Any]]:
    loop = asyncio.new_event_loop()
    database = fresh_database()
    try:
        url = loop.run_until_complete(database.__aenter__())
    except BaseException:
        loop.close()
        raise
    import asyncpg

    conn = loop.run_until_complete(asyncpg.connect(url))
    loop.run_until_complete(conn.execute(TABLE.replace("INTEGER PRIMARY KEY", "INTEGER")))
    try:
        yield loop, conn
    finally:
        loop.run_until_complete(conn.close())
        loop.run_until_complete(database.__aexit__(None, None, None))
        loop.close()


@pytest.mark.postgres
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    policy=policies,
    mfa_roles=st.sets(st.sampled_from(ROLES)),
    default_role=st.one_of(st.none(), st.sampled_from(ROLES)),
    who=subjects,
    objects=rows,
)
def test_plan_on_postgresql_is_the_decision(
    postgres: tuple[asyncio.AbstractEventLoop, Any],
    policy: list[dict[str, Any]],
    mfa_roles: set[str],
    default_role: str | None,
    who: list[Principal],
    objects: list[dict[str, Any]],
) -> None:
    loop, conn = postgres
    loop.run_until_complete(conn.execute("DELETE FROM assets"))
    loop.run_until_complete(
        conn.executemany("INSERT INTO assets VALUES ($1, $2, $3, $4)", [_row(i, o) for i, o in enumerate(objects)])
    )
    for compiled, p, method, plan in _cases(policy, mfa_roles, default_role, who):
        want = [i for i, o in enumerate(objects) if compiled.is_allowed(p, "asset", o, method)]
        where = to_sql(plan, COLUMNS, dialect="postgresql", paramstyle="numeric")
        found = loop.run_until_complete(
            conn.fetch(f"SELECT id FROM assets WHERE {where.sql} ORDER BY id", *where.params)
        )
        assert [r["id"] for r in found] == want, (plan, where, p, method)


# 3x the most examples a plan dropping a rule's `or` criteria took to fail it (planted bugs: docs/benchmarks.md).
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies, who=subjects, objects=rows)
def test_plan_as_sqlalchemy_is_the_decision(
    policy: list[dict[str, Any]], who: list[Principal], objects: list[dict[str, Any]]
) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from pluginsdk.plans import to_sqlalchemy

    engine = sqlalchemy.create_engine("sqlite://")
    with engine.begin() as db:
        db.exec_driver_sql(TABLE)
        db.exec_driver_sql("INSERT INTO assets VALUES (?, ?, ?, ?)", [_row(i, o) for i, o in enumerate(objects)])
        table = sqlalchemy.table("assets", sqlalchemy.column("id"))
        for compiled, p, method, plan in _cases(policy, set(), None, who):
            want = [i for i, o in enumerate(objects) if compiled.is_allowed(p, "asset", o, method)]
            query = sqlalchemy.select(table.c.id).where(to_sqlalchemy(plan, COLUMNS)).order_by(table.c.id)
            assert [r[0] for r in db.execute(query)] == want, plan


def test_sql_never_holds_a_value() -> None:
    """Quotes, `%`, `_`, `[` and `*` in values travel as parameters, escaped for LIKE / GLOB."""
    policy = CompiledPolicy(
        [
            {
                "objectType": "asset",
                "criteriaOr": [
                    {"field": "databaseId", "operator": "starts_with", "value": "a'%_[?x"},
                    {"field": "assetName", "operator": "is_one_of", "value": "x, y, z*"},
                ],
                "groupPermissions": [{"groupId": "r0", "permission": "GET", "permissionType": "allow"}],
            }
        ]
    )
    plan = plan_access(policy, Principal(user_id="u", roles=("r0",)), "asset", "GET", 0)
    lite = to_sql(plan, COLUMNS, dialect="sqlite", paramstyle="named")
    pg = to_sql(plan, COLUMNS, dialect="postgresql", paramstyle="numeric")
    assert "'" not in lite.sql and "a'" not in pg.sql.replace("'\\'", "")
    assert isinstance(lite.params, dict) and "a'%_[[][?]x*" in lite.params.values()
    assert "a'\\%\\_[?x%" in pg.params and lite.sql.count("IN (") == 1  # x and y in one IN list
    with pytest.raises(ValueError, match="databaseId"):  # a field left unmapped is an error, never "absent"
        to_sql(plan, {"assetName": "asset_name"})


def test_many_rules_on_one_field_state_one_leaf() -> None:
    """One-criterion rules on a field join in one `is_one_of` leaf (equal patterns once); a value that would not
    keep its meaning in a comma list (a comma, edge spaces) stays a leaf of its own; one rule stays as written."""

    def allow(i: int, value: str, operator: str = "equals", kind: str = "allow") -> dict[str, Any]:
        return {
            "constraintId": f"c{i}",
            "objectType": "asset",
            "criteriaAnd": [{"field": "databaseId", "operator": operator, "value": value}],
            "groupPermissions": [{"groupId": f"r{i % 2}", "permission": "GET", "permissionType": kind}],
        }

    values = [f"db-{i % 300}" for i in range(1000)]
    policy = CompiledPolicy(
        [
            *(allow(i, v) for i, v in enumerate(values)),
            allow(1000, "team-", "starts_with"),
            allow(1001, "a,b"),
            allow(1002, " padded"),
            allow(1003, "db-1", kind="deny"),
        ]
    )
    plan = plan_access(policy, Principal(user_id="u", roles=("r0", "r1")), "asset", "GET", 0)
    assert plan.condition is not None and plan.condition.op == "and"
    allowed, denied = plan.condition.operands
    joined = [c for c in allowed.operands if c.operator == "is_one_of"]
    assert len(joined) == 1 and joined[0].value is not None
    assert sorted(joined[0].value.split(",")) == sorted({*values, "team-*"})
    assert {(c.operator, c.value) for c in allowed.operands} - {("is_one_of", joined[0].value)} == {
        ("equals", "a,b"),
        ("equals", " padded"),
    }
    assert denied.op == "not" and (denied.operands[0].operator, denied.operands[0].value) == ("equals", "db-1")
    check = predicate(plan)
    for value in ("db-0", "db-1", "db-299", "db-300", "team-x", "a,b", "a", " padded", "padded"):
        attrs = {"databaseId": value}
        assert check(attrs) is policy.is_allowed(Principal(user_id="u", roles=("r0", "r1")), "asset", attrs, "GET")
