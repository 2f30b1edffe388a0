"""Roles and user-role assignments (spec rules 1-4 of the roles section), on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import AlreadyExistsError, NotFoundError, PermissionDeniedError, PluginSDK, ValidationError
from tests.auth.conftest import acting_as


async def test_default_roles_and_admin_assignment_exist_from_first_start(sdk: PluginSDK) -> None:
    roles = {r.role_name: r for r in (await sdk.list_roles()).message.items}
    assert {"admin", "basicReadOnly"} <= set(roles)
    assert roles["admin"].source == "INTERNAL_SYSTEM" and roles["admin"].mfa_required is False
    assignments = {a.user_id: a.role_name for a in (await sdk.list_user_roles()).message.items}
    assert assignments["administrator"] == ["admin"]


async def test_create_role_and_read_it_back(sdk: PluginSDK) -> None:
    res = await sdk.create_role(role_name="analysts", description="  Data analysts  ", mfa_required=True)
    assert res.success and res.operation == "create" and res.role_name == "analysts"
    role = next(r for r in (await sdk.list_roles()).message.items if r.role_name == "analysts")
    assert role.description == "Data analysts" and role.mfa_required and role.id
    assert role.created_on is not None and role.source is None


async def test_duplicate_role_is_409(sdk: PluginSDK) -> None:
    await sdk.create_role(role_name="dup", description="first one")
    with pytest.raises(AlreadyExistsError):
        await sdk.create_role(role_name="dup", description="second one")


@pytest.mark.parametrize("name", ["", "x" * 65, "bad/name", "semi;colon", "quote'"])
async def test_bad_role_names_are_rejected(sdk: PluginSDK, name: str) -> None:
    with pytest.raises(ValidationError):
        await sdk.create_role(role_name=name, description="valid text")


async def test_description_is_trimmed_then_checked(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError):
        await sdk.create_role(role_name="short", description="   ab   ")
    await sdk.create_role(role_name="inner", description="  two  words  ")
    role = next(r for r in (await sdk.list_roles()).message.items if r.role_name == "inner")
    assert role.description == "two  words"


async def test_update_is_partial(sdk: PluginSDK) -> None:
    await sdk.create_role(role_name="ops", description="Operators", source="LDAP", source_identifier="cn=ops")
    await sdk.update_role(role_name="ops", mfa_required=True)
    role = next(r for r in (await sdk.list_roles()).message.items if r.role_name == "ops")
    assert role.description == "Operators" and role.source == "LDAP" and role.source_identifier == "cn=ops"
    assert role.mfa_required is True
    res = await sdk.update_role(role_name="ops", source=None, mfa_required=False)
    assert res.operation == "update"
    role = next(r for r in (await sdk.list_roles()).message.items if r.role_name == "ops")
    assert role.source is None and role.mfa_required is False and role.source_identifier == "cn=ops"


@pytest.mark.parametrize(
    "body",
    [{}, {"description": None}, {"description": "  ab  "}, {"mfa_required": None}],
    ids=["only-roleName", "null-description", "padded-short-description", "null-mfa"],
)
async def test_update_rejections_are_400(sdk: PluginSDK, body: dict[str, object]) -> None:
    await sdk.create_role(role_name="keep", description="Keep me")
    with pytest.raises(ValidationError):
        await sdk.update_role(role_name="keep", **body)
    role = next(r for r in (await sdk.list_roles()).message.items if r.role_name == "keep")
    assert role.description == "Keep me"


async def test_update_or_delete_of_unknown_role_is_404(sdk: PluginSDK) -> None:
    with pytest.raises(NotFoundError):
        await sdk.update_role(role_name="ghost", description="nothing here")
    with pytest.raises(NotFoundError):
        await sdk.delete_role("ghost")


async def test_delete_role_keeps_assignments(sdk: PluginSDK) -> None:
    await sdk.create_role(role_name="temp", description="Temporary")
    await sdk.create_user_roles(user_id="carol", role_name=["temp"])
    res = await sdk.delete_role("temp")
    assert res.success and "remain" in res.message
    assert "temp" not in {r.role_name for r in (await sdk.list_roles()).message.items}
    carol = next(a for a in (await sdk.list_user_roles()).message.items if a.user_id == "carol")
    assert carol.role_name == ["temp"]


async def test_user_roles_create_replace_delete(sdk: PluginSDK) -> None:
    await sdk.create_role(role_name="a-role", description="Role A")
    await sdk.create_role(role_name="b-role", description="Role B")
    res = await sdk.create_user_roles("dave", ["a-role"])
    assert res.operation == "create" and res.user_id == "dave" and res.role_name == ["a-role"]
    await sdk.create_user_roles("dave", "b-role")  # a single name is a one-item list
    dave = next(a for a in (await sdk.list_user_roles()).message.items if a.user_id == "dave")
    assert sorted(dave.role_name) == ["a-role", "b-role"]
    with pytest.raises(AlreadyExistsError):
        await sdk.create_user_roles("dave", ["a-role"])
    await sdk.update_user_roles("dave", ["b-role"])
    dave = next(a for a in (await sdk.list_user_roles()).message.items if a.user_id == "dave")
    assert dave.role_name == ["b-role"]
    res = await sdk.delete_user_roles("dave")
    assert res.operation == "delete"
    assert "dave" not in {a.user_id for a in (await sdk.list_user_roles()).message.items}
    with pytest.raises(NotFoundError):
        await sdk.delete_user_roles("dave")


async def test_user_roles_must_name_existing_roles(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_user_roles("erin", ["admin", "nope"])
    assert "nope" in exc.value.message
    assert "erin" not in {a.user_id for a in (await sdk.list_user_roles()).message.items}
    with pytest.raises(ValidationError):
        await sdk.update_user_roles("erin", ["nope"])
    with pytest.raises(ValidationError):
        await sdk.create_user_roles("erin", [])


@pytest.mark.parametrize("user_id", ["ab", "has space", "x" * 257, "semi;colon"])
async def test_user_id_pattern(sdk: PluginSDK, user_id: str) -> None:
    with pytest.raises(ValidationError):
        await sdk.create_user_roles(user_id, ["admin"])


async def test_role_management_is_denied_to_read_only_users(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        for call in (
            reader.list_roles(),
            reader.create_role(role_name="x", description="escalate"),
            reader.create_user_roles("reader", ["admin"]),
            reader.delete_role("admin"),  # denied before existence is checked
            reader.delete_role("no-such-role"),
        ):
            with pytest.raises(PermissionDeniedError):
                await call
    assert "admin" in {r.role_name for r in (await sdk.list_roles()).message.items}
