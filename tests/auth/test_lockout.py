"""No lock-out: changes that would leave nobody able to administer roles are refused (409, saying why), and
the operator who holds the store recovers with `pluginsdk auth break-glass` (a local CLI command)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from pluginsdk import PermissionDeniedError, PluginSDK, SDKError, StateConflictError
from pluginsdk.principal import Principal
from tests.auth.conftest import CHEAP_HASHING, acting_as, call_as
from tests.auth.grants import failure, role, rule
from tests.support.backends import base_config, open_sdk
from tests.support.cli import Result, clean_environment, invoke


def _locked_out(err: SDKError) -> None:
    assert isinstance(err, StateConflictError) and err.status == 409
    assert "no user could administer roles and user roles" in err.message and "break-glass" in err.message


async def _still_admin(sdk: PluginSDK) -> None:
    held = {a.user_id: a.role_name for a in (await sdk.list_user_roles()).message.items}
    assert "admin" in held["administrator"]
    assert any(r.role_name == "admin" and not r.mfa_required for r in (await sdk.list_roles()).message.items)


async def test_changes_that_remove_the_last_administrator_are_refused(sdk: PluginSDK) -> None:
    _locked_out(await failure(sdk.delete_user_roles("administrator")))
    _locked_out(await failure(sdk.update_user_roles("administrator", ["basicReadOnly"])))
    _locked_out(await failure(sdk.update_role("admin", mfa_required=True)))  # nobody here can sign in with MFA
    _locked_out(await failure(sdk.delete_role("admin")))
    for cid in ("psdk-default-admin-api", "psdk-default-admin-userRole", "psdk-default-admin-role"):
        _locked_out(await failure(sdk.delete_constraint(cid)))
    deny = {
        "name": "deny admins", "description": "locks everyone out", "object_type": "api",
        "criteria_or": [{"field": "route__path", "operator": "starts_with", "value": "/user-roles"}],
        "group_permissions": [{"groupId": "admin", "permission": "PUT", "permissionType": "deny"}],
    }  # fmt: skip
    _locked_out(await failure(sdk.create_constraint("lock", **deny)))
    _locked_out(await failure(sdk.import_constraints_template(constraints=[{"constraintId": "lock2", **{
        "name": deny["name"], "description": deny["description"], "objectType": "api",
        "criteriaOr": deny["criteria_or"], "groupPermissions": deny["group_permissions"]}}])))  # fmt: skip
    await _still_admin(sdk)  # nothing was written
    assert "lock" not in {c.constraint_id for c in (await sdk.list_constraints()).message.items}


async def test_with_a_second_administrator_the_first_can_go(sdk: PluginSDK) -> None:
    await sdk.create_user_roles("backup", ["admin"])
    await sdk.update_role("admin", description="administrators, two of them")
    await sdk.delete_user_roles("administrator")  # backup remains


async def test_mfa_only_admin_is_fine_when_admins_can_use_mfa(tmp_path: Path) -> None:
    external = {
        "enabled": True, "issuer": "https://idp.test", "clientId": "c", "jwksUrl": "https://idp.test/jwks",
    }  # fmt: skip
    async with open_sdk("local", tmp_path, app={"authProvider": {"useExternalOAuthIdp": external}}) as sdk:
        await sdk.update_role("admin", mfa_required=True)  # the IdP may issue MFA tokens: not a lock-out


async def test_mfa_only_admin_in_the_managed_pool_needs_an_admin_with_mfa(tmp_path: Path) -> None:
    app = {"authProvider": {"useManaged": {"enabled": True, "passwordHashing": CHEAP_HASHING}}}
    async with open_sdk("local", tmp_path, app=app) as sdk:
        await sdk.create_managed_user(user_id="mia", email="mia@example.com")
        await sdk.create_user_roles("mia", ["admin"])
        _locked_out(await failure(sdk.update_role("admin", mfa_required=True)))  # mia has no MFA yet
        _sql(tmp_path, "UPDATE auth_users SET mfa_enabled = 1 WHERE user_id = 'mia'")
        await sdk.update_role("admin", mfa_required=True)  # mia can sign in with MFA and administer


async def test_a_store_already_without_administrator_is_not_blocked(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        await role(sdk, "role-writers", routes="/roles*")
        await rule(sdk, "role-writers", "role", [("roleName", "equals", "*")], ("GET", "POST", "PUT"))
        await sdk.create_user_roles("writer", ["role-writers"])
    _sql(tmp_path, "DELETE FROM auth_user_roles WHERE user_id = 'administrator'")
    async with acting_as(sdk, "writer", tmp_path) as rw:  # in-process on the same store
        await rw.create_role(role_name="new-role", description="created while nobody administers")


async def test_concurrent_removals_leave_one_administrator(local_sdk: PluginSDK) -> None:
    sdk = local_sdk
    await sdk.create_user_roles("backup", ["admin"])
    results = await asyncio.gather(  # each administrator removes the other, at the same time
        call_as(sdk, Principal(user_id="administrator"), "delete_user_roles", user_id="backup"),
        call_as(sdk, Principal(user_id="backup"), "delete_user_roles", user_id="administrator"),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1, results
    assert all(
        isinstance(r, StateConflictError | PermissionDeniedError) for r in results if isinstance(r, BaseException)
    )
    rows = await sdk.backend.engine.authz.store.user_role_rows()  # type: ignore[attr-defined]
    assert [r["user_id"] for r in rows if r["role_name"] == "admin"] in (["administrator"], ["backup"])


def _sql(tmp_path: Path, *statements: str) -> None:
    with sqlite3.connect(tmp_path / "store.db") as conn:
        for s in statements:
            conn.execute(s)
        conn.execute(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'auth.policy_version'"
        )


def _break_glass(tmp_path: Path, user: str) -> Result:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(base_config(tmp_path)))
    return invoke(clean_environment(), "--config", str(config), "auth", "break-glass", "--user", user)


@pytest.mark.parametrize("damage", ["assignment", "everything"])
async def test_break_glass_restores_an_administrator(tmp_path: Path, damage: str) -> None:
    async with PluginSDK(config=base_config(tmp_path)):
        pass  # a store with its defaults
    statements = ["DELETE FROM auth_user_roles WHERE role_name = 'admin'"]
    if damage == "everything":
        statements += [
            "DELETE FROM auth_roles WHERE role_name = 'admin'",
            "DELETE FROM auth_constraints WHERE constraint_id LIKE 'psdk-default-admin-%'",
        ]
    _sql(tmp_path, *statements)
    async with PluginSDK(config=base_config(tmp_path)) as sdk:
        assert isinstance(await failure(sdk.list_roles()), SDKError)  # locked out
    done = _break_glass(tmp_path, "administrator")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["canAdminister"] is True and report["assigned"] is True
    assert any(b.startswith("the lock-out guard") for b in report["bypassed"])
    assert report["roleCreated"] is (damage == "everything")
    assert bool(report["constraintsRestored"]) is (damage == "everything")
    async with PluginSDK(config=base_config(tmp_path)) as sdk:
        await _still_admin(sdk)


async def test_break_glass_names_a_deny_that_still_applies(tmp_path: Path) -> None:
    async with PluginSDK(config=base_config(tmp_path)):
        pass
    deny = {
        "constraintId": "old-deny", "name": "old deny", "description": "from older data", "objectType": "api",
        "criteriaOr": [{"field": "route__path", "operator": "equals", "value": "/roles"}],
        "groupPermissions": [{"groupId": "admin", "permission": "GET", "permissionType": "deny"}],
    }  # fmt: skip
    _sql(
        tmp_path,
        "DELETE FROM auth_user_roles WHERE role_name = 'admin'",
        "INSERT INTO auth_constraints (constraint_id, object_type, data, created_at, updated_at) VALUES "
        f"('old-deny', 'api', '{json.dumps(deny)}', '2026-01-01', '2026-01-01')",
    )
    done = _break_glass(tmp_path, "administrator")
    report = json.loads(done.out)
    assert done.code == 1 and report["assigned"] is True
    assert report["canAdminister"] is False and report["denyConstraints"] == ["old-deny"]
    assert "`pluginsdk constraints delete ID`" in done.err and "pluginsdk " not in report["message"]
    bad = _break_glass(tmp_path, "bad user id!")
    assert bad.code == 1 and json.loads(bad.out)["error_code"] == "VALIDATION_ERROR"


@pytest.mark.postgres
async def test_concurrent_removals_on_postgres_leave_one_administrator(pg_url: str, tmp_path: Path) -> None:
    config = base_config(tmp_path, storage={"type": "postgresql", "url": pg_url})
    async with PluginSDK(config=config) as first, PluginSDK(config=config, user="backup") as second:
        await first.create_user_roles("backup", ["admin"])
        for _ in range(3):  # two engines, two connections: the removals really overlap
            results = await asyncio.gather(
                first.delete_user_roles("backup"), second.delete_user_roles("administrator"), return_exceptions=True
            )
            assert sum(not isinstance(r, BaseException) for r in results) == 1, results
            rows = await first.backend.engine.authz.store.user_role_rows()  # type: ignore[attr-defined]
            admins = [r["user_id"] for r in rows if r["role_name"] == "admin"]
            assert len(admins) == 1
            engine = first.backend.engine  # type: ignore[attr-defined]
            await engine.authz.store.add_user_roles(  # put the other one back, directly
                "backup" if admins == ["administrator"] else "administrator", ["admin"], "2026-01-01T00:00:00+00:00"
            )
            await engine.authz.store.bump_policy_version()
