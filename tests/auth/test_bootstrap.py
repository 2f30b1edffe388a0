"""Bootstrap endpoints, login profiles, route catalogue and route authorization."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import PermissionDeniedError, PluginSDK, ValidationError, __version__
from pluginsdk.operations import CATALOG
from tests.auth.conftest import acting_as, managed_app
from tests.support.backends import open_sdk


async def test_version_and_amplify_config_need_no_sign_in(sdk: PluginSDK) -> None:
    assert CATALOG["get_version"].policy.unauthenticated and CATALOG["get_amplify_config"].policy.unauthenticated
    assert (await sdk.get_version()).version == __version__
    cfg = (await sdk.get_amplify_config()).model_dump(by_alias=True)
    assert cfg["managedUserPoolId"] == "undefined" and cfg["managedAppClientId"] == "undefined"
    assert cfg["managedIdentityPoolId"] == "undefined" and cfg["managedUserPoolEndpoint"] == "undefined"
    assert {"region", "api", "contentSecurityPolicy", "bannerHtmlMessage"} <= set(cfg)
    assert not any(k.startswith("externalOAuth") for k in cfg)


async def test_amplify_config_with_the_managed_pool(tmp_path: Path) -> None:
    app = managed_app()
    app.update({"region": "eu-west-1", "apiUrl": "https://api.example/stage/", "bannerHtmlMessage": "<b>hi</b>"})
    async with open_sdk("local", tmp_path, app=app) as sdk:
        cfg = (await sdk.get_amplify_config()).model_dump(by_alias=True)
        assert cfg["region"] == "eu-west-1" and cfg["api"] == "https://api.example/stage/"
        assert cfg["managedUserPoolId"] != "undefined" and cfg["managedUserPoolEndpoint"] != "undefined"
        assert cfg["bannerHtmlMessage"] == "<b>hi</b>"
        secure = await sdk.get_secure_config()
        assert "AUTHPROVIDER_MANAGED" in secure.features_enabled.split(",")
        assert secure.location_service_api_url == "" and secure.web_deployed_url == ""


async def test_secure_config_needs_a_role(sdk: PluginSDK, tmp_path: Path) -> None:
    assert (await sdk.get_secure_config()).features_enabled
    async with acting_as(sdk, "norole", tmp_path) as nobody:
        with pytest.raises(PermissionDeniedError):
            await nobody.get_secure_config()
        assert (await nobody.get_version()).version  # unauthenticated routes stay open


async def test_login_profile_is_self_only(sdk: PluginSDK, tmp_path: Path) -> None:
    assert (await sdk.get_login_profile("administrator")).model_dump(exclude_none=True) == {"user_id": "administrator"}
    res = await sdk.update_login_profile("administrator", email="admin@example.com")
    assert res.email == "admin@example.com"
    assert (await sdk.get_login_profile("administrator")).email == "admin@example.com"
    with pytest.raises(PermissionDeniedError):
        await sdk.get_login_profile("someone-else")
    with pytest.raises(PermissionDeniedError):
        await sdk.update_login_profile("someone-else", email="x@example.com")
    with pytest.raises(ValidationError):
        await sdk.get_login_profile("no spaces allowed")
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        assert (await reader.get_login_profile("reader")).user_id == "reader"
        with pytest.raises(PermissionDeniedError):
            await reader.get_login_profile("administrator")
    async with acting_as(sdk, "norole", tmp_path) as nobody:
        with pytest.raises(PermissionDeniedError):
            await nobody.get_login_profile("norole")


async def test_route_catalogue_covers_every_operation(sdk: PluginSDK) -> None:
    routes = {r.path: r for r in (await sdk.list_api_routes()).routes}
    for spec in CATALOG.values():
        assert spec.rest is not None
        for path in spec.rest.paths:
            assert spec.rest.method in routes[path].methods, (spec.name, path)
    assert routes["/api/version"].unauthenticated and not routes["/auth/constraints"].unauthenticated
    assert "/api/v1/templates" in routes and routes["/api/v1/templates"].category == "templates"
    assert set(routes["/auth/constraints/{constraint_id}"].methods) == {"GET", "POST", "PUT", "DELETE"}


async def test_allowed_routes_follow_the_callers_roles(sdk: PluginSDK, tmp_path: Path) -> None:
    everything = await sdk.list_allowed_api_routes()
    assert everything.user_id == "administrator"
    assert len(everything.routes) == len((await sdk.list_api_routes()).routes)
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        allowed = {r.path: r.methods for r in (await reader.list_allowed_api_routes()).routes}
        assert allowed["/api/v1/templates"] == ["GET"]
        assert set(allowed["/auth/user/api-keys"]) == {"GET", "POST"}
        assert "/auth/api-keys" not in allowed and "/roles" not in allowed
        assert allowed["/api/version"] == ["GET"]


async def test_web_routes(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_role(role_name="viewers", description="Web viewers")
    await sdk.create_user_roles("viewer", ["viewers"])
    await sdk.create_constraint(
        "web-assets",
        name="viewers see asset pages",
        description="web pages under /assets",
        object_type="web",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/assets"}],
        group_permissions=[{"groupId": "viewers", "permission": "GET", "permissionType": "allow"}],
    )
    routes = [
        {"method": "GET", "route__path": "/assets"},
        {"method": "GET", "route__path": "/assets/123"},
        {"method": "POST", "route__path": "/assets"},
        {"method": "GET", "route__path": "/admin"},
    ]
    async with acting_as(sdk, "viewer", tmp_path) as viewer:
        with pytest.raises(PermissionDeniedError):  # no api constraint grants POST /auth/routes yet
            await viewer.authorize_web_routes(routes)
    await sdk.create_constraint(
        "viewers-api",
        name="viewers check routes",
        description="web client route check",
        object_type="api",
        criteria_or=[{"field": "route__path", "operator": "equals", "value": "/auth/routes"}],
        group_permissions=[{"groupId": "viewers", "permission": "POST", "permissionType": "allow"}],
    )
    async with acting_as(sdk, "viewer", tmp_path) as viewer:
        res = await viewer.authorize_web_routes(routes)
    wire = res.model_dump(by_alias=True)
    assert wire["allowedRoutes"] == [
        {"method": "GET", "route__path": "/assets", "object__type": "web"},
        {"method": "GET", "route__path": "/assets/123", "object__type": "web"},
    ]
    assert wire["email"] == "viewer"


@pytest.mark.parametrize(
    "routes",
    [[], [{"method": "GET", "route__path": "/x"}] * 501, [{"method": "PATCH", "route__path": "/x"}],
     [{"method": "GET", "route__path": "/" + "x" * 512}], [{"method": "GET"}]],
    ids=["empty", "501", "bad-method", "path-513", "no-path"],
)  # fmt: skip
async def test_web_route_limits(sdk: PluginSDK, routes: list[dict[str, str]]) -> None:
    with pytest.raises(ValidationError):
        await sdk.authorize_web_routes(routes)


async def test_web_route_limits_at_the_edge(sdk: PluginSDK) -> None:
    res = await sdk.authorize_web_routes([{"method": "GET", "route__path": "/" + "x" * 511}] * 500)
    assert len(res.allowed_routes) == 500
