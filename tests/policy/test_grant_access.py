"""The two tiers, visible and granted together (docs/policy.md, "Two tiers"): a check and an explanation about an
object type say whether the subject may call that type's routes, and `grant_access` writes the object constraint
and its route constraints in one step — idempotent, audited, needing the right to create each — on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pluginsdk import AlreadyExistsError, NotFoundError, PermissionDeniedError, PluginSDK
from tests.auth.conftest import acting_as
from tests.policy.test_decision_point import perm

_WEB = [{"field": "templateId", "operator": "starts_with", "value": "web-"}]


async def _templates(sdk: PluginSDK) -> None:
    for tid in ("web-a", "db-a"):
        await sdk.create_template(template_id=tid, image_id="ami-1")
    await sdk.create_role(role_name="web-reader", description="reads the web templates")
    await sdk.create_user_roles("wendy", ["web-reader"])


async def test_a_check_says_the_route_is_closed_until_both_tiers_are_granted(sdk: PluginSDK, tmp_path: Path) -> None:
    await _templates(sdk)
    # the object constraint alone: the object decision allows, tier 1 does not — and the check says so
    await sdk.create_constraint(
        "web-objects",
        name="web templates",
        description="web templates for web readers",
        object_type="template",
        criteria_and=_WEB,
        group_permissions=[perm("web-reader", "GET")],
    )
    d = await sdk.check_access("template", "GET", user_id="wendy", attributes={"templateId": "web-a"})
    assert d.allowed and d.route_allowed is False
    assert d.routes is not None and [(r.method, r.path, r.allowed) for r in d.routes] == [
        ("GET", "/api/v1/templates/web-a", False)
    ]
    e = await sdk.explain_access("template", "GET", user_id="wendy", attributes={"templateId": "web-a"})
    assert e.allowed and e.route_allowed is False
    assert any(r.kind == "route" and "tier 1 denies" in r.detail for r in e.reasons)
    unknown = await sdk.check_access("template", "GET", user_id="wendy")  # no id: the route's answer depends on it
    assert unknown.route_allowed is None and unknown.routes and unknown.routes[0].allowed is None
    assert (await sdk.check_access("asset", "GET", user_id="wendy")).routes is None  # no asset routes here
    async with acting_as(sdk, "wendy", tmp_path) as wendy:
        with pytest.raises(PermissionDeniedError):
            await wendy.get_template("web-a")

    granted = await sdk.grant_access("web-reader", "template", ["GET"], criteria_and=_WEB)
    assert granted.created and granted.routes == ["GET /api/v1/templates/web-*"]
    assert granted.revision is not None and len(granted.constraint_ids) == 2
    d = await sdk.check_access("template", "GET", user_id="wendy", attributes={"templateId": "web-a"})
    assert d.allowed and d.route_allowed is True
    other = await sdk.check_access("template", "GET", user_id="wendy", attributes={"templateId": "db-a"})
    assert not other.allowed and other.route_allowed is False  # the route is narrowed like the objects
    async with acting_as(sdk, "wendy", tmp_path) as wendy:
        assert (await wendy.get_template("web-a")).template.template_id == "web-a"
        with pytest.raises((PermissionDeniedError, NotFoundError)):
            await wendy.get_template("db-a")


async def test_grant_access_is_idempotent_audited_and_all_or_nothing(sdk: PluginSDK) -> None:
    await _templates(sdk)
    first = await sdk.grant_access("web-reader", "template", ["GET", "PUT"], criteria_and=_WEB)
    again = await sdk.grant_access("web-reader", "template", ["PUT", "GET"], criteria_and=_WEB)
    assert first.created and not again.created and again.constraint_ids == first.constraint_ids
    assert again.revision == first.revision  # nothing written the second time
    assert sorted(first.routes) == ["GET /api/v1/templates/web-*", "PUT /api/v1/templates/web-*"]
    records = (await sdk.list_audit_records(action="grant_access")).records
    assert sorted(r.target_id for r in records) == sorted(first.constraint_ids)  # one record each, the second call none
    assert all(r.before is None and r.after for r in records)
    # an id holding another constraint: 409, and nothing of the grant is written
    await sdk.create_constraint(
        "mine-get",
        name="taken",
        description="another constraint under the id",
        object_type="api",
        criteria_or=[{"field": "route__path", "operator": "equals", "value": "/api/v1/templates"}],
        group_permissions=[perm("web-reader", "GET")],
    )
    with pytest.raises(AlreadyExistsError):
        await sdk.grant_access("web-reader", "template", ["GET"], criteria_and=_WEB, grant_id="mine")
    with pytest.raises(NotFoundError):
        await sdk.get_constraint("mine")


async def test_a_grant_excludes_the_other_routes_its_pattern_reaches(sdk: PluginSDK) -> None:
    by_template = [{"field": "templateId", "operator": "equals", "value": "t1"}]  # says nothing of the request id
    granted = await sdk.grant_access("admin", "request", ["GET"], criteria_and=by_template, grant_id="reqs")
    route = await sdk.get_constraint("reqs-get")
    assert "GET /api/v1/requests/*" in granted.routes
    excluded = route.criteria_and[0].value.split(",")
    assert "/api/v1/requests/summary" in excluded and "/api/v1/requests/active" in excluded


async def test_grant_access_needs_the_right_to_create_both_constraints(sdk: PluginSDK, tmp_path: Path) -> None:
    await _templates(sdk)
    await sdk.create_role(role_name="granter", description="may grant")
    grant_route: dict[str, Any] = {"field": "route__path", "operator": "equals", "value": "/auth/grants"}
    await sdk.create_constraint(
        "granter-routes",
        name="granter",
        description="the grant route and one constraint id",
        object_type="api",
        criteria_or=[grant_route, {"field": "route__path", "operator": "equals", "value": "/auth/constraints/g1"}],
        group_permissions=[perm("granter", "POST")],
    )
    await sdk.create_user_roles("gina", ["granter"])
    async with acting_as(sdk, "gina", tmp_path) as gina:
        with pytest.raises(PermissionDeniedError, match="/auth/constraints/g1-get"):
            await gina.grant_access("web-reader", "template", ["GET"], criteria_and=_WEB, grant_id="g1")
    with pytest.raises(NotFoundError):
        await sdk.get_constraint("g1")
