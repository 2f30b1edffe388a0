"""The policy decision point on both backends: checks for any subject, explain, who-can, subject routes,
what-if (and the import dry run), policy tests — through the SDK (in-process, and remote over REST)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pluginsdk import PermissionDeniedError, PluginSDK, ValidationError
from pluginsdk.models.policy_results import SubjectDecision
from tests.auth.conftest import acting_as

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def perm(role: str, method: str, kind: str = "allow") -> dict[str, str]:
    return {"groupId": role, "permission": method, "permissionType": kind}


def project_constraint(
    cid: str, roles: dict[str, str], *, value: str = "proj-*", kind: str = "allow"
) -> dict[str, Any]:
    """Assets whose databaseId matches `value`: each role gets its space-separated methods."""
    return {
        "constraintId": cid,
        "name": cid,
        "description": f"test constraint {cid}",
        "objectType": "asset",
        "criteriaAnd": [{"field": "databaseId", "operator": "starts_with", "value": value}],
        "groupPermissions": [perm(r, m, kind) for r, ms in roles.items() for m in ms.split()],
    }


async def _setup(sdk: PluginSDK) -> None:
    await sdk.create_role(role_name="editor", description="edits project assets")
    await sdk.create_role(role_name="secure", description="needs a second factor", mfa_required=True)
    await sdk.import_constraints_template(
        constraints=[
            project_constraint("edit-proj", {"editor": "GET PUT", "secure": "DELETE"}),
            project_constraint("no-secret", {"editor": "PUT"}, value="proj-secret", kind="deny"),
        ]
    )
    await sdk.create_user_roles("alice", ["editor"])
    await sdk.create_user_roles("bob", ["editor", "secure"])


async def test_check_any_subject_single_and_batch(sdk: PluginSDK) -> None:
    await _setup(sdk)
    asset = {"databaseId": "proj-1"}
    got = await sdk.check_access("asset", "PUT", user_id="alice", attributes=asset)
    assert got.allowed and got.roles == ["editor"] and got.revision > 0
    assert not (
        await sdk.check_access("asset", "PUT", user_id="alice", attributes={"databaseId": "proj-secret"})
    ).allowed
    assert not (await sdk.check_access("asset", "DELETE", user_id="bob", attributes=asset)).allowed  # no MFA
    assert (await sdk.check_access("asset", "DELETE", user_id="bob", mfa=True, attributes=asset)).allowed
    assert (await sdk.check_access("asset", "DELETE", roles=["secure"], mfa=True, attributes=asset)).allowed
    assert not (await sdk.check_access("asset", "GET", roles=["no-such-role"], attributes=asset)).allowed
    assert not (await sdk.check_access("asset", "GET", user_id="mallory", attributes=asset)).allowed
    questions = [
        {"userId": "alice", "objectType": "asset", "attributes": asset, "method": "GET"},
        {"userId": "alice", "objectType": "asset", "attributes": asset, "method": "DELETE"},
        {"roles": ["secure"], "mfa": True, "objectType": "asset", "attributes": asset, "method": "DELETE"},
        {"roles": [], "objectType": "asset", "attributes": asset, "method": "GET"},
        {"userId": "alice", "objectType": "asset", "attributes": {"databaseId": "other"}, "method": "GET"},
    ]
    batch = await sdk.check_access_batch(questions)
    assert [d.allowed for d in batch.decisions] == [True, False, True, False, False]
    assert all(d.revision == batch.revision for d in batch.decisions)


async def test_subject_checks_need_their_own_route(sdk: PluginSDK, tmp_path: Path) -> None:
    await _setup(sdk)
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        with pytest.raises(PermissionDeniedError):
            await reader.check_access("asset", "GET", user_id="alice", attributes={"databaseId": "proj-1"})
        with pytest.raises(PermissionDeniedError):
            await reader.who_can("asset", "GET")
    # A service role granted exactly the check routes may ask about anyone (and nothing more).
    await sdk.create_role(role_name="pdp-client", description="a service asking for its users")
    await sdk.create_constraint(
        "pdp-client-routes",
        name="pdp client",
        description="the check routes",
        object_type="api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/auth/check"}],
        group_permissions=[perm("pdp-client", "POST")],
    )
    await sdk.create_user_roles("svc", ["pdp-client"])
    async with acting_as(sdk, "svc", tmp_path) as svc:
        assert (await svc.check_access("asset", "GET", user_id="alice", attributes={"databaseId": "proj-1"})).allowed
        batch = await svc.check_access_batch([{"userId": "bob", "objectType": "asset", "method": "PUT",
                                               "attributes": {"databaseId": "proj-2"}}])  # fmt: skip
        assert batch.decisions[0].allowed
        with pytest.raises(PermissionDeniedError):
            await svc.explain_access("asset", "GET", user_id="alice")


async def test_a_check_answers_what_its_fields_validate_to(sdk: PluginSDK, tmp_path: Path) -> None:
    """The answer the engine builds without validating it again is the model its own fields validate to: the same
    fields, JSON and truth value — with the roles, without them (a caller who may not read roles), with routes."""
    await _setup(sdk)
    asset = {"databaseId": "proj-1"}
    answers = [
        await sdk.check_access("asset", "PUT", user_id="alice", attributes=asset),
        await sdk.check_access("asset", "DELETE", roles="secure", mfa=True, attributes=asset),  # one role for a list
        await sdk.check_access("template", "GET", attributes={"templateId": "web"}, **{"userId": "bob"}),
    ]
    assert [a.allowed for a in answers] == [True, True, False] and answers[1].roles == ["secure"]
    assert answers[2].routes and answers[2].route_allowed is not None  # the routes acting on a template
    await sdk.create_role(role_name="pdp-client", description="a service asking for its users")
    await sdk.create_constraint(
        "pdp-client-routes",
        name="pdp client",
        description="the check routes",
        object_type="api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/auth/check"}],
        group_permissions=[perm("pdp-client", "POST")],
    )
    await sdk.create_user_roles("svc", ["pdp-client"])
    async with acting_as(sdk, "svc", tmp_path) as svc:
        hidden = await svc.check_access("asset", "PUT", user_id="alice", attributes=asset)
    assert hidden.allowed and hidden.roles is None and hidden.routes is None
    for got in [*answers, hidden]:
        again = SubjectDecision.model_validate(got.model_dump())
        assert again == got and again.model_dump_json(by_alias=True) == got.model_dump_json(by_alias=True)
        assert str(again) == str(got) and bool(again) is bool(got)
    with pytest.raises(ValidationError, match="name the subject: user_id, or roles"):
        await sdk.check_access("asset", "GET", attributes=asset)


async def test_explain(sdk: PluginSDK) -> None:
    await _setup(sdk)
    e = await sdk.explain_access("asset", "PUT", user_id="alice", attributes={"databaseId": "proj-1"})
    assert e.allowed and [(r.constraint_id, r.via) for r in e.allowed_by] == [("edit-proj", "role:editor")]
    assert e.reasons[0].kind == "decision" and e.reasons[0].detail.startswith("ALLOW")
    e = await sdk.explain_access("asset", "PUT", user_id="alice", attributes={"databaseId": "proj-secret"})
    assert not e.allowed and [r.constraint_id for r in e.denied_by] == ["no-secret"]
    assert [r.constraint_id for r in e.allowed_by] == ["edit-proj"]
    e = await sdk.explain_access("asset", "DELETE", user_id="bob", attributes={"databaseId": "proj-1"})
    assert not e.allowed and e.no_allow_matched
    assert [(r.via, "MFA" in r.detail) for r in e.skipped_roles] == [("role:secure", True)]
    e = await sdk.check_access("asset", "GET", roles=["ghost"], attributes={}, explain=True)
    assert e.explanation is not None and e.explanation.no_allow_matched and e.explanation.roles == []
    assert [(r.via, r.detail) for r in e.explanation.skipped_roles] == [("role:ghost", "the role does not exist")]


async def test_who_can_and_subject_routes(sdk: PluginSDK) -> None:
    await _setup(sdk)
    w = await sdk.who_can("asset", "PUT", attributes={"databaseId": "proj-secret"})
    assert w.denied_roles == ["editor"] and "admin" in w.allowed_roles
    assert "alice" in w.denied_users and "bob" in w.denied_users and "administrator" in w.allowed_users
    w = await sdk.who_can("asset", "DELETE", attributes={"databaseId": "proj-1"})
    assert w.mfa_only_roles == ["secure"] and "secure" not in w.allowed_roles and "bob" not in w.allowed_users
    w = await sdk.who_can("asset", "DELETE", attributes={"databaseId": "proj-1"}, mfa=True)
    assert "secure" in w.allowed_roles and "bob" in w.allowed_users and "alice" not in w.allowed_users
    routes = await sdk.list_subject_routes(user_id="alice")
    assert routes.roles == ["editor"]  # editor has no API routes: only the open ones (login, version) show
    assert routes.routes and not any(r.path.startswith(("/api/v1", "/auth/check")) for r in routes.routes)
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    routes = await sdk.list_subject_routes(user_id="reader", web_routes=[{"method": "GET", "route__path": "/assets"}])
    paths = {r.path: r.methods for r in routes.routes}
    assert paths["/api/v1/templates"] == ["GET"] and "/auth/check" not in paths and "/roles" not in paths
    admin = await sdk.list_subject_routes(roles=["admin"])
    assert "POST" in {r.path: r.methods for r in admin.routes}["/auth/check"]
    assert [w.route__path for w in admin.web_routes] == []
    admin = await sdk.list_subject_routes(roles=["admin"], web_routes=[{"method": "GET", "route__path": "/assets"}])
    assert [w.route__path for w in admin.web_routes] == ["/assets"] and admin.web_route_patterns == ["*"]


async def test_what_if_and_import_dry_run(sdk: PluginSDK) -> None:
    await _setup(sdk)
    before = (await sdk.list_constraints()).message.items
    grant = {
        "constraintId": "reader-checks",
        "name": "reader checks",
        "description": "let readers ask",
        "objectType": "api",
        "criteriaOr": [{"field": "route__path", "operator": "equals", "value": "/auth/check"}],
        "groupPermissions": [perm("basicReadOnly", "POST")],
    }
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    report = await sdk.what_if(add_constraints=[grant])
    flips = {(c.subject, c.target, c.method, c.before, c.after) for c in report.changes}
    assert flips == {
        ("user:reader", "/auth/check", "POST", False, True),
        ("role:basicReadOnly", "/auth/check", "POST", False, True),
    }
    assert report.denied_to_allowed == 2 and report.allowed_to_denied == 0
    objects = [{"objectType": "asset", "attributes": {"databaseId": "proj-1"}}]
    report = await sdk.what_if(delete_constraint_ids=["edit-proj"], objects=objects)
    lost = {(c.subject, c.method) for c in report.changes if c.before and not c.after}
    assert {("user:alice", "GET"), ("user:alice", "PUT"), ("role:editor", "PUT")} <= lost
    report = await sdk.what_if(user_roles={"alice": []}, role_mfa={"secure": False}, objects=objects)
    flips = {(c.subject, c.method, c.after) for c in report.changes}
    assert ("user:alice", "PUT", False) in flips and ("user:bob", "DELETE", True) in flips
    dry = await sdk.import_constraints_template(constraints=[grant], dry_run=True)
    assert dry.what_if is not None and dry.what_if.denied_to_allowed == 2
    assert dry.what_if.changes == (await sdk.what_if(add_constraints=[grant])).changes  # the same report
    assert (await sdk.list_constraints()).message.items == before  # nothing applied
    with pytest.raises(ValidationError):
        await sdk.what_if(add_constraints=[{"constraintId": "bad", "objectType": "asset"}])


async def test_what_if_on_the_objects_the_policy_names(sdk: PluginSDK) -> None:
    """`policy_objects`: the stored objects of each type the policy names (here templates) and, for a type the
    store does not hold (assets), the object a constraint's criteria name — what the console's preview runs."""
    await _setup(sdk)
    for template_id in ("hidden", "shown"):
        await sdk.create_template(template_id=template_id, image_id="img-1")
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    deny = {
        "constraintId": "hide",
        "name": "hide",
        "description": "readers lose one template",
        "objectType": "template",
        "criteriaAnd": [{"field": "templateId", "operator": "equals", "value": "hidden"}],
        "groupPermissions": [perm("basicReadOnly", "GET", "deny")],
    }
    assert (await sdk.what_if(add_constraints=[deny])).allowed_to_denied == 0  # routes alone: nothing flips
    report = await sdk.what_if(add_constraints=[deny], policy_objects=True)
    lost = {(c.subject, c.target) for c in report.changes if c.kind == "object"}
    hidden = '{"providerApi": "aws", "templateId": "hidden"}'
    assert lost == {("user:reader", hidden), ("role:basicReadOnly", hidden)}
    assert report.allowed_to_denied == 2 and report.denied_to_allowed == 0
    report = await sdk.what_if(delete_constraint_ids=["edit-proj"], policy_objects=True)
    assert ("user:alice", "PUT") in {(c.subject, c.method) for c in report.changes if c.object_type == "asset"}


async def test_policy_test_suite(sdk: PluginSDK) -> None:
    suite = yaml.safe_load((EXAMPLES / "policy_tests.yaml").read_text())["tests"]
    report = await sdk.run_policy_tests(suite)
    assert report.passed and report.total == len(suite) and report.failures == 0
    wrong = [{**suite[2], "expect": "deny"}, suite[3]]
    with pytest.raises(ValidationError) as exc:
        await sdk.run_policy_tests(wrong)
    assert suite[2]["name"] in exc.value.message and suite[3]["name"] not in exc.value.message
    report = await sdk.run_policy_tests(wrong, fail_on_mismatch=False)
    assert not report.passed and [o.passed for o in report.outcomes] == [False, True]
    # Against a candidate: deleting the reader constraint makes "readers read templates" fail.
    report = await sdk.run_policy_tests(
        suite, delete_constraint_ids=["psdk-default-readonly-template"], fail_on_mismatch=False
    )
    assert [o.name for o in report.outcomes if not o.passed] == [suite[2]["name"]]


async def test_bad_questions_are_400s(sdk: PluginSDK) -> None:
    q = {"userId": "alice", "objectType": "asset", "method": "GET"}
    for bad in (
        [{**q, "objectType": "spaceship"}],  # unknown object type
        [{**q, "usrId": "typo"}],  # unknown field: refused, not ignored
        [{"objectType": "asset", "method": "GET"}],  # no subject
        [{**q, "method": "PATCH"}],
        [q] * 10_001,  # over the batch limit
    ):
        with pytest.raises(ValidationError):
            await sdk.check_access_batch(bad)
    with pytest.raises(ValidationError):
        await sdk.check_access("asset", "GET")  # no subject
    with pytest.raises(ValidationError):
        await sdk.list_audit_records(since="not a time")
    with pytest.raises(ValidationError):
        await sdk.run_policy_tests([{**q, "expect": "maybe"}])
