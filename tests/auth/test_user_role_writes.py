"""Replacing and deleting user-role assignments is authorized for every assignment it removes (both backends)."""

from __future__ import annotations

from pathlib import Path

from pluginsdk import NotFoundError, PermissionDeniedError, PluginSDK
from tests.auth.conftest import acting_as
from tests.auth.grants import ALL, failure, role, rule, same_answer


async def _assigners(sdk: PluginSDK) -> None:
    """May assign any role except `admin`: PUT/POST/DELETE on it are denied."""
    await role(sdk, "assigners", routes="/user-roles*")
    await rule(sdk, "assigners", "userRole", [("roleName", "equals", "*")], ALL)
    await rule(sdk, "assigners", "userRole", [("roleName", "equals", "admin")], ("PUT", "POST", "DELETE"), "deny")
    await sdk.create_user_roles("assigner", ["assigners"])


async def _held(sdk: PluginSDK, user: str) -> list[str]:
    found = [a for a in (await sdk.list_user_roles()).message.items if a.user_id == user]
    return sorted(found[0].role_name) if found else []


async def test_replacing_needs_the_removed_roles_allowed(sdk: PluginSDK, tmp_path: Path) -> None:
    await _assigners(sdk)
    await sdk.create_user_roles("dana", ["admin", "basicReadOnly"])
    await sdk.create_role(role_name="dev", description="developers")
    async with acting_as(sdk, "assigner", tmp_path) as a:
        for roles in (["basicReadOnly"], ["basicReadOnly", "dev"]):  # each would remove admin
            err = await failure(a.update_user_roles("dana", roles))
            assert isinstance(err, PermissionDeniedError) and err.status == 403
        assert isinstance(await failure(a.update_user_roles("dana", ["admin"])), PermissionDeniedError)  # named
        assert isinstance(await failure(a.delete_user_roles("dana")), PermissionDeniedError)
        await a.create_user_roles("erin", ["basicReadOnly"])
        await a.update_user_roles("erin", ["dev"])  # removing an allowed role is fine
        assert await _held(sdk, "erin") == ["dev"]
        await a.delete_user_roles("erin")
    assert await _held(sdk, "dana") == ["admin", "basicReadOnly"]
    assert await _held(sdk, "erin") == []


async def test_removal_needs_delete_as_well_as_put(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_role(role_name="dev", description="developers")
    await sdk.create_role(role_name="ops", description="operators")
    await role(sdk, "putters", routes="/user-roles*")
    await rule(sdk, "putters", "userRole", [("roleName", "equals", "*")], ("GET", "PUT", "POST"))
    await sdk.create_user_roles("putter", ["putters"])
    await sdk.create_user_roles("fred", ["dev"])
    async with acting_as(sdk, "putter", tmp_path) as p:
        await p.update_user_roles("fred", ["dev", "ops"])  # adds only
        assert isinstance(await failure(p.update_user_roles("fred", ["ops"])), PermissionDeniedError)
    assert await _held(sdk, "fred") == ["dev", "ops"]


async def test_deleting_assignments_the_caller_may_not_read_answers_like_none(sdk: PluginSDK, tmp_path: Path) -> None:
    await role(sdk, "team-admins", routes="/user-roles*")
    await rule(sdk, "team-admins", "userRole", [("roleName", "starts_with", "team-")], ALL)
    await sdk.create_user_roles("tadmin", ["team-admins"])
    await sdk.create_role(role_name="team-x", description="team x")
    await sdk.create_role(role_name="team-y", description="team y")
    await sdk.create_user_roles("gina", ["basicReadOnly"])
    await sdk.create_user_roles("hank", ["team-x", "basicReadOnly"])
    async with acting_as(sdk, "tadmin", tmp_path) as t:
        missing = await failure(t.delete_user_roles("nobody-here"))
        assert isinstance(missing, NotFoundError)
        same_answer(await failure(t.delete_user_roles("gina")), missing, "gina", "nobody-here")
        # hank has one assignment tadmin may read and one it may not: the hidden one is left alone and unnamed,
        # as if it did not exist (a refusal would tell that it does)
        replaced = await t.update_user_roles("hank", ["team-y"])
        assert replaced.role_name == ["team-y"]
        assert await _held(sdk, "hank") == ["basicReadOnly", "team-y"]
        await t.delete_user_roles("hank")
        same_answer(await failure(t.delete_user_roles("hank")), missing, "hank", "nobody-here")
    assert await _held(sdk, "gina") == ["basicReadOnly"]
    assert await _held(sdk, "hank") == ["basicReadOnly"]
