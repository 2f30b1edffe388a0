"""Every way to replace a constraint needs what `PUT /auth/constraints/{id}` needs (both backends).

The caller may read and create constraints (GET, POST on `/auth/constraints*`) but not update them (no PUT):
replacing a stored constraint — a deny among them — through the create's `replace_existing` (the REST
default, the VAMS client's upsert) or the template import's `overwrite` answers 403 and leaves it as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from pluginsdk import PermissionDeniedError, PluginSDK
from tests.auth.conftest import acting_as
from tests.auth.grants import failure, role

DENY: dict[str, Any] = {
    "name": "no secret writes",
    "description": "nobody changes the secret database",
    "object_type": "asset",
    "criteria_and": [{"field": "databaseId", "operator": "equals", "value": "secret"}],
    "group_permissions": [{"groupId": "creators", "permission": "PUT", "permissionType": "deny"}],
}
LOOSE: dict[str, Any] = {
    **DENY,
    "name": "loosened",
    "group_permissions": [{"groupId": "creators", "permission": "PUT", "permissionType": "allow"}],
}
WIRE = {
    "constraintId": "deny-secret",
    "name": "loosened",
    "description": "nobody changes the secret database",
    "objectType": "asset",
    "criteriaAnd": [{"field": "databaseId", "operator": "equals", "value": "secret"}],
    "groupPermissions": [{"groupId": "creators", "permission": "PUT", "permissionType": "allow"}],
}


async def _creators(sdk: PluginSDK, *methods: str) -> None:
    await role(sdk, "creators", routes="/auth/constraints*", methods=methods)
    await sdk.create_user_roles("maker", ["creators"])
    await sdk.create_constraint("deny-secret", **DENY)


async def _unchanged(sdk: PluginSDK) -> None:
    stored = await sdk.get_constraint("deny-secret")
    assert stored.name == DENY["name"]
    assert [g.permission_type for g in stored.group_permissions] == ["deny"]


async def test_replacing_without_put_is_403_on_every_route(sdk: PluginSDK, tmp_path: Path) -> None:
    await _creators(sdk, "GET", "POST")
    async with acting_as(sdk, "maker", tmp_path) as maker:
        for call in (
            maker.create_constraint("deny-secret", **LOOSE, replace_existing=True),
            maker.import_constraints_template(constraints=[WIRE], overwrite=True),
        ):
            err = await failure(call)
            assert isinstance(err, PermissionDeniedError) and err.status == 403, err
            assert "PUT /auth/constraints/deny-secret" in err.message
            await _unchanged(sdk)
        await maker.create_constraint("fresh-one", **LOOSE)  # creating stays allowed
        await maker.import_constraints_template(constraints=[{**WIRE, "constraintId": "fresh-two"}], overwrite=True)


async def test_replacing_with_put_works_on_every_route(sdk: PluginSDK, tmp_path: Path) -> None:
    await _creators(sdk, "GET", "POST", "PUT")
    async with acting_as(sdk, "maker", tmp_path) as maker:
        await maker.create_constraint("deny-secret", **{**LOOSE, "name": "by create"}, replace_existing=True)
        assert (await sdk.get_constraint("deny-secret")).name == "by create"
        await maker.import_constraints_template(constraints=[WIRE], overwrite=True)
        assert (await sdk.get_constraint("deny-secret")).name == "loosened"


async def test_the_vams_upsert_without_put_is_403(tmp_path: Path) -> None:
    """`POST /auth/constraints/{id}` with a body alone (the REST default replaces) as the VAMS client sends it."""
    from tests.support.backends import open_sdk

    async with open_sdk("remote", tmp_path) as sdk:
        await _creators(sdk, "GET", "POST")
        key = (await sdk.create_api_key(api_key_name="maker", user_id="maker", description="upserts")).api_key
        async with httpx.AsyncClient(base_url=sdk.settings.api.url, headers={"Authorization": key}) as http:
            body = {k: v for k, v in WIRE.items() if k != "constraintId"}
            r = await http.post("/auth/constraints/deny-secret", json=body)
            assert r.status_code == 403 and r.json()["error_code"] == "FORBIDDEN", r.text
            r = await http.post("/auth/constraintsTemplateImport", json={"constraints": [WIRE], "overwrite": True})
            assert r.status_code == 403 and r.json()["error_code"] == "FORBIDDEN", r.text
        await _unchanged(sdk)
