"""Two-tier authorization end to end: zero-role users, default role, deny across roles, injection-looking
values, object checks for embedding services, policy changes seen on the next decision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pluginsdk import NotFoundError, PermissionDeniedError, PluginSDK, ValidationError
from tests.auth.conftest import acting_as
from tests.support.backends import open_sdk


def perm(role: str, method: str, kind: str = "allow") -> dict[str, str]:
    return {"groupId": role, "permission": method, "permissionType": kind}


async def _constraint(sdk: PluginSDK, cid: str, object_type: str, *, criteria_or: Any = None,
                      criteria_and: Any = None, perms: list[dict[str, str]], users: Any = None) -> None:  # fmt: skip
    await sdk.create_constraint(
        cid,
        name=cid,
        description=f"test constraint {cid}",
        object_type=object_type,
        criteria_or=criteria_or,
        criteria_and=criteria_and,
        group_permissions=perms,
        user_permissions=users,
    )


async def test_zero_role_user_is_denied_everything_but_open_routes(sdk: PluginSDK, tmp_path: Path) -> None:
    async with acting_as(sdk, "nobody", tmp_path) as nobody:
        for call in (nobody.list_templates(), nobody.list_my_api_keys(), nobody.list_allowed_api_routes()):
            with pytest.raises(PermissionDeniedError) as exc:
                await call
            assert exc.value.status == 403 and exc.value.error_code == "FORBIDDEN"
        assert (await nobody.get_version()).version


async def test_default_user_role_name(tmp_path: Path) -> None:
    app = {"authProvider": {"authorizerOptions": {"defaultUserRoleName": "basicReadOnly"}}}
    async with open_sdk("local", tmp_path, app=app) as sdk:
        await sdk.create_template(template_id="t1", image_id="ami-1")
        async with acting_as(sdk, "newcomer", tmp_path) as newcomer:
            assert [t.template_id for t in (await newcomer.list_templates()).templates] == ["t1"]
            with pytest.raises(PermissionDeniedError):
                await newcomer.create_template(template_id="t2", image_id="ami-2")
        await sdk.create_role(role_name="nothing", description="grants nothing")
        await sdk.create_user_roles("assigned", ["nothing"])
        async with acting_as(sdk, "assigned", tmp_path) as assigned:  # holds a role: the default does not apply
            with pytest.raises(PermissionDeniedError):
                await assigned.list_templates()


async def test_authorization_before_existence(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        with pytest.raises(NotFoundError):
            await reader.get_template("missing")  # allowed to read: the answer is "not found"
        for call in (reader.delete_template("missing"), reader.get_constraint("missing"), reader.delete_role("x")):
            with pytest.raises(PermissionDeniedError):  # not allowed: 403 whether or not it exists
                await call


async def test_deny_in_one_role_overrides_allow_in_another(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_template(template_id="public-web", image_id="ami-1")
    await sdk.create_template(template_id="secret-gpu", image_id="ami-2")
    await sdk.create_role(role_name="no-secrets", description="denies secret templates")
    await _constraint(
        sdk, "deny-secret", "template",
        criteria_or=[{"field": "templateId", "operator": "starts_with", "value": "secret-"}],
        perms=[perm("no-secrets", "GET", "deny")],
    )  # fmt: skip
    await sdk.create_user_roles("mixed", ["basicReadOnly", "no-secrets"])
    async with acting_as(sdk, "mixed", tmp_path) as mixed:
        assert [t.template_id for t in (await mixed.list_templates()).templates] == ["public-web"]
        with pytest.raises(NotFoundError):  # may not read it: answered like a missing template
            await mixed.get_template("secret-gpu")
        assert (await mixed.get_template("public-web")).template.template_id == "public-web"


@pytest.mark.parametrize(
    "value",
    ["it's", 'say "hi"', "a,b", "db.1", "(.*)", "x) || true || (y", "r.sub == r.sub", "\\", "[a-z]+", "%", "_"],
)
async def test_injection_looking_values_are_literal(sdk: PluginSDK, tmp_path: Path, value: str) -> None:
    await sdk.create_role(role_name="lit", description="literal values")
    await _constraint(
        sdk, "lit-db", "database",
        criteria_and=[{"field": "databaseId", "operator": "equals", "value": value}],
        perms=[perm("lit", "GET")],
    )  # fmt: skip
    await _constraint(
        sdk, "lit-api", "api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/auth/authorize"}],
        perms=[perm("lit", "POST")],
    )  # fmt: skip
    await sdk.create_user_roles("lit-user", ["lit"])
    async with acting_as(sdk, "lit-user", tmp_path) as user:
        assert (await user.is_allowed("database", {"databaseId": value})).allowed
        for other in ("dbX1", "anything", value + "x", "x" + value, ""):
            if other != value:
                assert not (await user.is_allowed("database", {"databaseId": other})).allowed, other
        # the stored value never disturbs other roles' checks
        assert not (await user.is_allowed("database", {"databaseId": value}, method="DELETE")).allowed
    assert (await sdk.is_allowed("database", {"databaseId": value})).allowed


async def test_is_one_of_with_crafted_value_grants_nothing_extra(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_role(role_name="some", description="some databases")
    await _constraint(
        sdk, "some-db", "database",
        criteria_or=[{"field": "databaseId", "operator": "is_one_of", "value": "a,b') || true || ('"}],
        perms=[perm("some", "GET")],
    )  # fmt: skip
    await _constraint(
        sdk, "some-api", "api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/auth/authorize"}],
        perms=[perm("some", "POST")],
    )  # fmt: skip
    await sdk.create_user_roles("someone", ["some"])
    async with acting_as(sdk, "someone", tmp_path) as user:
        res = await user.filter_allowed("database", [{"databaseId": d} for d in ("a", "b", "c", "zzz", "b')")])
        assert [o["databaseId"] for o in res.allowed] == ["a"] and res.indexes == [0]


async def test_tags_list_field(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_role(role_name="taggers", description="tagged assets")
    await _constraint(
        sdk, "tagged", "asset",
        criteria_and=[{"field": "tags", "operator": "equals", "value": "public"}],
        perms=[perm("taggers", "GET")],
    )  # fmt: skip
    await _constraint(
        sdk, "untagged-deny", "asset",
        criteria_and=[{"field": "tags", "operator": "equals", "value": "secret"}],
        perms=[perm("taggers", "GET", "deny")],
    )  # fmt: skip
    await _constraint(
        sdk, "taggers-api", "api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/auth/authorize"}],
        perms=[perm("taggers", "POST")],
    )  # fmt: skip
    await sdk.create_user_roles("tagger", ["taggers"])
    objs: list[dict[str, Any]] = [
        {"tags": ["x", "public"]},
        {"tags": []},
        {"assetName": "a"},
        {"tags": ["public", "secret"]},
        {"tags": "public"},
    ]
    async with acting_as(sdk, "tagger", tmp_path) as user:
        assert (await user.filter_allowed("asset", objs)).indexes == [0, 4]


async def test_criteria_and_with_or_is_one_conjunction(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_role(role_name="conj", description="and plus or")
    await _constraint(
        sdk, "conj-asset", "asset",
        criteria_and=[{"field": "databaseId", "operator": "equals", "value": "db1"}],
        criteria_or=[{"field": "assetType", "operator": "equals", "value": "image"},
                     {"field": "assetType", "operator": "equals", "value": "video"}],
        perms=[perm("conj", "GET")],
    )  # fmt: skip
    await _constraint(
        sdk, "conj-api", "api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/auth/authorize"}],
        perms=[perm("conj", "POST")],
    )  # fmt: skip
    await sdk.create_user_roles("conj-user", ["conj"])
    objs = [
        {"databaseId": "db1", "assetType": "image"},
        {"databaseId": "db1", "assetType": "text"},
        {"databaseId": "db2", "assetType": "image"},
        {"databaseId": "db1", "assetType": "video"},
    ]
    async with acting_as(sdk, "conj-user", tmp_path) as user:
        assert (await user.filter_allowed("asset", objs)).indexes == [0, 3]


async def test_user_permissions_grant_to_a_named_user(sdk: PluginSDK, tmp_path: Path) -> None:
    await _constraint(
        sdk, "uma-api", "api",
        criteria_or=[{"field": "route__path", "operator": "equals", "value": "/api/v1/templates"}],
        perms=[perm("admin", "GET")],
        users=[{"userId": "uma", "permission": "GET", "permissionType": "allow"}],
    )  # fmt: skip
    await _constraint(
        sdk, "uma-tpl", "template",
        criteria_or=[{"field": "templateId", "operator": "equals", "value": "*"}],
        perms=[perm("admin", "GET")],
        users=[{"userId": "uma", "permission": "GET", "permissionType": "allow"}],
    )  # fmt: skip
    await sdk.create_template(template_id="t", image_id="ami-1")
    async with acting_as(sdk, "uma", tmp_path) as uma:
        assert [t.template_id for t in (await uma.list_templates()).templates] == ["t"]
        with pytest.raises(PermissionDeniedError):
            await uma.list_requests()


async def test_policy_change_is_seen_on_the_next_decision_in_another_process(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("late", ["basicReadOnly"])
    async with acting_as(sdk, "late", tmp_path) as late:
        with pytest.raises(PermissionDeniedError):
            await late.list_roles()
        await sdk.create_user_roles("late", ["admin"])  # through another engine on the same store
        assert (await late.list_roles()).message.items
        await sdk.delete_user_roles("late")
        with pytest.raises(PermissionDeniedError):
            await late.list_templates()
        await sdk.create_user_roles("late", ["basicReadOnly"])
        assert (await late.list_templates()).templates == []
        await sdk.delete_constraint("psdk-default-readonly-api-read")
        with pytest.raises(PermissionDeniedError):
            await late.list_templates()


async def test_policy_is_compiled_once_per_version(local_sdk: PluginSDK) -> None:
    svc = local_sdk.backend.engine.authz  # type: ignore[attr-defined]
    await local_sdk.list_templates()
    before = svc.compiles
    for _ in range(20):
        await local_sdk.list_templates()
    assert svc.compiles == before
    await local_sdk.create_role(role_name="bump", description="changes the version")
    await local_sdk.list_templates()
    assert svc.compiles == before + 1


async def test_unknown_object_type_is_400(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError):
        await sdk.is_allowed("spaceship", {"x": "y"})
    with pytest.raises(ValidationError):
        await sdk.is_allowed("asset", {}, method="PATCH")


async def test_provisioning_tier2_on_creation(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1")
    await sdk.create_template(template_id="gpu", image_id="ami-2")
    await sdk.create_role(role_name="web-users", description="may request web machines")
    await _constraint(
        sdk, "web-api", "api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/api/v1/"}],
        perms=[perm("web-users", "GET"), perm("web-users", "POST")],
    )  # fmt: skip
    await _constraint(
        sdk, "web-req", "request",
        criteria_and=[{"field": "templateId", "operator": "equals", "value": "web"},
                      {"field": "userId", "operator": "equals", "value": "wes"}],
        perms=[perm("web-users", "POST"), perm("web-users", "GET")],
    )  # fmt: skip
    await sdk.create_user_roles("wes", ["web-users"])
    async with acting_as(sdk, "wes", tmp_path) as wes:
        created = await wes.create_request("web", 1)
        assert created.request_id.startswith("req-")
        with pytest.raises(PermissionDeniedError):
            await wes.create_request("gpu", 1)
