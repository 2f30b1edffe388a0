"""Constraint operations on both backends: CRUD by exact id, paging, validation, template import, permissionObjects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import AlreadyExistsError, NotFoundError, PermissionDeniedError, PluginSDK, ValidationError
from pluginsdk.errors import InvalidPaginationToken
from tests.auth.conftest import acting_as

DEFAULTS = "psdk-default-"


def body(**over: Any) -> dict[str, Any]:
    b: dict[str, Any] = {
        "name": "db1 assets",
        "description": "assets of database db1",
        "object_type": "asset",
        "criteria_and": [{"field": "databaseId", "operator": "equals", "value": "db1"}],
        "group_permissions": [{"groupId": "readers", "permission": "GET", "permissionType": "allow"}],
    }
    b.update(over)
    return b


async def mine(sdk: PluginSDK) -> list[str]:
    """Ids of the constraints that are not the seeded defaults."""
    items = [c.constraint_id async for c in sdk.iterate("list_constraints")]
    return [i for i in items if not i.startswith(DEFAULTS)]


async def test_create_get_update_delete(sdk: PluginSDK) -> None:
    res = await sdk.create_constraint("c1", **body(description="   padded description   "))
    assert res.success and res.operation == "create" and res.constraint_id == "c1"
    assert res.constraint is not None
    stored = json.loads(res.constraint)
    assert stored["identifier"] == "c1" and stored["objectType"] == "asset"
    assert stored["description"] == "padded description"  # trimmed before storing
    got = await sdk.get_constraint("c1")
    assert got.description == "padded description" and got.criteria_and[0].value == "db1"
    assert got.group_permissions[0].group_id == "readers"

    upd = await sdk.update_constraint(
        "c1",
        **body(
            name="renamed", criteria_and=None, criteria_or=[{"field": "tags", "operator": "contains", "value": "x"}]
        ),
    )
    assert upd.operation == "update"
    got = await sdk.get_constraint("c1")
    assert got.name == "renamed" and got.criteria_and == [] and got.criteria_or[0].field == "tags"

    deleted = await sdk.delete_constraint("c1")
    assert deleted.operation == "delete" and deleted.constraint is None
    with pytest.raises(NotFoundError) as exc:
        await sdk.get_constraint("c1")
    assert exc.value.status == 404


async def test_ids_are_exact_c1_is_not_c10(sdk: PluginSDK) -> None:
    for cid in ("c1", "c10", "c1x"):
        await sdk.create_constraint(cid, **body(name=cid))
    assert (await sdk.get_constraint("c1")).name == "c1"
    await sdk.delete_constraint("c1")
    assert await mine(sdk) == ["c10", "c1x"]
    with pytest.raises(NotFoundError):
        await sdk.delete_constraint("c1")
    with pytest.raises(NotFoundError):
        await sdk.update_constraint("c1", **body())


async def test_duplicate_create_is_409_and_keeps_the_original(sdk: PluginSDK) -> None:
    await sdk.create_constraint("dup", **body(name="first"))
    with pytest.raises(AlreadyExistsError) as exc:
        await sdk.create_constraint("dup", **body(name="second"))
    assert exc.value.status == 409 and exc.value.error_code == "ALREADY_EXISTS"
    assert (await sdk.get_constraint("dup")).name == "first"


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"criteria_and": [{"field": "route__path", "operator": "equals", "value": "x"}]}, "criteriaAnd[0].field"),
        ({"criteria_and": [{"field": "databaseId", "operator": "matches", "value": "x"}]}, "criteriaAnd[0].operator"),
        ({"criteria_and": [{"field": "databaseId", "operator": "is_one_of", "value": " , "}]}, "criteriaAnd[0].value"),
        ({"criteria_and": None}, "criteriaAnd"),
        ({"object_type": "spaceship"}, "objectType"),
        ({"description": "  ab  "}, "description"),
        (
            {"group_permissions": [{"groupId": "r", "permission": "PATCH", "permissionType": "allow"}]},
            "groupPermissions[0].permission",
        ),
        (
            {"group_permissions": [{"groupId": "r", "permission": "GET", "permissionType": "maybe"}]},
            "groupPermissions[0].permissionType",
        ),
        (
            {"user_permissions": [{"userId": "x", "permission": "GET", "permissionType": "allow"}]},
            "userPermissions[0].userId",
        ),
    ],
)
async def test_invalid_constraint_is_400_naming_the_field(sdk: PluginSDK, over: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_constraint("bad", **body(**over))
    assert exc.value.status == 400 and exc.value.details["field"] == field
    with pytest.raises(NotFoundError):
        await sdk.get_constraint("bad")


@pytest.mark.parametrize("cid", ["permissionObjects", "a/b", "x" * 129, "sp ace"])
async def test_bad_constraint_ids_are_rejected(sdk: PluginSDK, cid: str) -> None:
    with pytest.raises(ValidationError):
        await sdk.create_constraint(cid, **body())


async def test_paging_page_size_max_items_and_tokens(sdk: PluginSDK) -> None:
    total = len([c async for c in sdk.iterate("list_constraints")])
    for i in range(7):
        await sdk.create_constraint(f"p{i}", **body(name=f"p{i}"))
    assert len([c async for c in sdk.iterate("list_constraints")]) == total + 7

    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = await sdk.list_constraints(page_size=5, max_items=3, starting_token=token)
        assert len(page.message.items) <= 3  # the smallest of pageSize, maxItems, 3000
        seen += [c.constraint_id for c in page.message.items]
        pages += 1
        token = page.message.next_token
        if token is None:
            break
    assert len(seen) == len(set(seen)) == total + 7 and seen == sorted(seen)
    assert pages == -(-(total + 7) // 3)

    last = await sdk.list_constraints(page_size=10000)
    assert len(last.message.items) == total + 7 and last.message.next_token is None
    for bad in ("garbage", token or "x.y"):
        with pytest.raises(InvalidPaginationToken) as exc:
            await sdk.list_constraints(starting_token=bad)
        assert exc.value.status == 400
    with pytest.raises(ValidationError):
        await sdk.list_constraints(page_size=10001)
    with pytest.raises(ValidationError):
        await sdk.list_constraints(max_items=0)


async def test_permission_objects_is_the_authoritative_table(sdk: PluginSDK) -> None:
    res = (await sdk.get_permission_objects()).message
    types = {t.value: [f.value for f in t.fields] for t in res.object_types}
    assert types["asset"] == ["databaseId", "assetName", "assetType", "tags"]
    assert types["api"] == ["route__path"] and types["template"] == ["templateId", "providerApi"]
    assert {
        "database",
        "pipeline",
        "workflow",
        "tag",
        "tagType",
        "role",
        "userRole",
        "web",
        "metadataSchema",
        "request",
        "machine",
    } <= set(types)
    assert [o.value for o in res.operators] == [
        "equals",
        "contains",
        "does_not_contain",
        "starts_with",
        "ends_with",
        "is_one_of",
        "is_not_one_of",
    ]
    assert [p.value for p in res.permissions] == ["GET", "PUT", "POST", "DELETE"]
    assert [p.value for p in res.permission_types] == ["allow", "deny"]
    assert all(t.label for t in res.object_types)


TEMPLATE: dict[str, Any] = {
    "name": "database onboarding",
    "variables": {"DATABASE_ID": "db-'7',\"x\"", "ROLE": "db7-readers"},
    "constraints": [
        {
            "constraintId": "{{ROLE}}-assets",
            "name": "{{ROLE}} read assets",
            "description": "read assets of {{DATABASE_ID}}",
            "objectType": "asset",
            "criteriaAnd": [{"field": "databaseId", "operator": "equals", "value": "{{DATABASE_ID}}"}],
            "groupPermissions": [{"groupId": "{{ROLE}}", "permission": "GET", "permissionType": "allow"}],
        },
        {
            "name": "{{ROLE}} read database",
            "description": "read database {{DATABASE_ID}}",
            "objectType": "database",
            "criteriaOr": [{"field": "databaseId", "operator": "equals", "value": "{{DATABASE_ID}}"}],
            "groupPermissions": [{"groupId": "{{ROLE}}", "permission": "GET", "permissionType": "allow"}],
        },
    ],
}


async def test_template_import_substitutes_literally_and_takes_effect(sdk: PluginSDK, tmp_path: Path) -> None:
    res = await sdk.import_constraints_template(**TEMPLATE)
    assert res.success and len(res.constraint_ids) == 2 and res.constraint_ids[0] == "db7-readers-assets"
    got = await sdk.get_constraint("db7-readers-assets")
    assert got.criteria_and[0].value == "db-'7',\"x\"" and got.group_permissions[0].group_id == "db7-readers"
    assert (await sdk.get_constraint(res.constraint_ids[1])).object_type == "database"

    await sdk.create_role(role_name="db7-readers", description="reads database 7")
    await sdk.create_user_roles("dana", ["db7-readers"])
    await sdk.create_constraint(
        "db7-readers-check",
        **body(
            object_type="api",
            criteria_and=[{"field": "route__path", "operator": "equals", "value": "/auth/authorize"}],
            group_permissions=[{"groupId": "db7-readers", "permission": "POST", "permissionType": "allow"}],
        ),
    )
    async with acting_as(sdk, "dana", tmp_path) as dana:
        ok = await dana.is_allowed(object_type="asset", attributes={"databaseId": "db-'7',\"x\""}, method="GET")
        no = await dana.is_allowed(object_type="asset", attributes={"databaseId": "db-'7'"}, method="GET")
    assert ok.allowed and not no.allowed


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t["variables"].pop("ROLE"),  # unresolved {{ROLE}}
        lambda t: t["constraints"][1].update(objectType="spaceship"),  # second one invalid
        lambda t: t["constraints"][1].update(constraintId="{{ROLE}}-assets"),  # same id twice
        lambda t: t["constraints"][1].update(constraintId="bad id"),
    ],
)
async def test_template_import_is_all_or_nothing(sdk: PluginSDK, change: Any) -> None:
    template = json.loads(json.dumps(TEMPLATE))
    change(template)
    before = await mine(sdk)
    with pytest.raises(ValidationError) as exc:
        await sdk.import_constraints_template(**template)
    assert exc.value.status == 400
    assert await mine(sdk) == before


async def test_template_import_existing_ids_need_overwrite(sdk: PluginSDK) -> None:
    await sdk.create_constraint("db7-readers-assets", **body(name="original"))
    before = await mine(sdk)
    with pytest.raises(AlreadyExistsError) as exc:
        await sdk.import_constraints_template(**TEMPLATE)
    assert exc.value.status == 409
    assert await mine(sdk) == before and (await sdk.get_constraint("db7-readers-assets")).name == "original"
    res = await sdk.import_constraints_template(**TEMPLATE, overwrite=True)
    assert "1 replaced" in res.message
    assert (await sdk.get_constraint("db7-readers-assets")).name == "db7-readers read assets"


async def test_constraint_routes_need_their_tier1_grant(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        for call in (
            reader.list_constraints(),
            reader.get_permission_objects(),
            reader.create_constraint(
                "sneaky",
                **body(
                    group_permissions=[{"groupId": "basicReadOnly", "permission": "DELETE", "permissionType": "allow"}]
                ),
            ),
            reader.import_constraints_template(**TEMPLATE),
            reader.delete_constraint("psdk-default-admin-api"),
        ):
            with pytest.raises(PermissionDeniedError) as exc:
                await call
            assert exc.value.status == 403
    with pytest.raises(NotFoundError):
        await sdk.get_constraint("sneaky")
    await sdk.get_constraint("psdk-default-admin-api")
