"""Tier 1 decides on the path actually called: the REST alias paths of an operation are routes of their own.

Over REST (a real server on loopback, raw HTTP so the exact path is chosen), and in-process through the
engine's `route_path` keyword, which is what the server passes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from pluginsdk import PermissionDeniedError, PluginSDK
from pluginsdk.operations import get_spec
from pluginsdk.principal import Principal
from tests.auth.grants import failure, role, rule
from tests.support.backends import open_sdk


@pytest.fixture
async def remote(tmp_path: Path) -> AsyncIterator[PluginSDK]:
    async with open_sdk("remote", tmp_path) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1", max_number=5)
        yield sdk


async def _key_for(sdk: PluginSDK, user: str, role_name: str) -> str:
    await sdk.create_user_roles(user, [role_name])
    return str((await sdk.create_api_key(api_key_name=f"k-{user}", user_id=user, description="route tests")).api_key)


async def _post(sdk: PluginSDK, key: str, path: str, body: dict[str, object]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=sdk.settings.api.url or "") as client:
        return await client.post(path, json=body, headers={"Authorization": key})


async def test_deny_on_the_alias_path_bites(remote: PluginSDK) -> None:
    await role(remote, "posters", routes="/api/v1/*", methods=("GET", "POST"))
    await rule(remote, "posters", "api", [("route__path", "equals", "/api/v1/machines/request")], ("POST",), "deny")
    await rule(remote, "posters", "request", [("templateId", "equals", "*")], ("GET", "POST"))
    key = await _key_for(remote, "poster", "posters")
    denied = await _post(remote, key, "/api/v1/machines/request", {"templateId": "web", "count": 1})
    assert denied.status_code == 403 and denied.json()["error_code"] == "FORBIDDEN"
    assert "/api/v1/machines/request" in denied.json()["error"]
    allowed = await _post(remote, key, "/api/v1/machines", {"templateId": "web", "count": 1})
    assert allowed.status_code == 202, allowed.text
    assert [r.created_by for r in (await remote.list_requests()).requests] == ["poster"]  # only one was made


async def test_allow_on_the_alias_path_alone_suffices(remote: PluginSDK) -> None:
    await role(remote, "alias-only", routes=None)
    await rule(remote, "alias-only", "api", [("route__path", "equals", "/api/v1/machines/request")], ("POST",))
    await rule(remote, "alias-only", "request", [("templateId", "equals", "web")], ("POST", "GET"))
    key = await _key_for(remote, "aliaser", "alias-only")
    ok = await _post(remote, key, "/api/v1/machines/request", {"templateId": "web", "count": 1})
    assert ok.status_code == 202, ok.text
    first = await _post(remote, key, "/api/v1/machines", {"templateId": "web", "count": 1})
    assert first.status_code == 403 and first.json()["error_code"] == "FORBIDDEN"


async def test_get_request_alias_is_its_own_route(remote: PluginSDK) -> None:
    rid = (await remote.create_request("web", 1)).request_id
    await role(remote, "no-status", routes="/api/v1/*", methods=("GET",))
    await rule(remote, "no-status", "api", [("route__path", "ends_with", "/status")], ("GET",), "deny")
    await rule(remote, "no-status", "request", [("requestId", "equals", "*")])
    key = await _key_for(remote, "reader", "no-status")
    async with httpx.AsyncClient(base_url=remote.settings.api.url or "", headers={"Authorization": key}) as c:
        assert (await c.get(f"/api/v1/requests/{rid}")).status_code == 200
        assert (await c.get(f"/api/v1/requests/{rid}/status")).status_code == 403


async def test_engine_route_path_in_process(local_sdk: PluginSDK) -> None:
    sdk = local_sdk
    await sdk.create_template(template_id="web", image_id="ami-1", max_number=5)
    await role(sdk, "posters", routes="/api/v1/*", methods=("GET", "POST"))
    await rule(sdk, "posters", "api", [("route__path", "equals", "/api/v1/machines/request")], ("POST",), "deny")
    await rule(sdk, "posters", "request", [("templateId", "equals", "*")], ("GET", "POST"))
    await sdk.create_user_roles("poster", ["posters"])
    engine = sdk.backend.engine  # type: ignore[attr-defined]
    op = get_spec("create_request").build({"template_id": "web", "count": 1, "dry_run": True})
    who = Principal(user_id="poster")
    assert (await engine.execute(op, who)).dry_run  # in-process: the first path, allowed
    assert (await engine.execute(op, who, route_path="/api/v1/machines")).dry_run
    err = await failure(engine.execute(op, who, route_path="/api/v1/machines/request"))
    assert isinstance(err, PermissionDeniedError)
    for foreign in ("/api/v1/templates", "/api/v1/machines/x", "/api/v1/machines/", "/api/v1/machines/request/"):
        assert isinstance(await failure(engine.execute(op, who, route_path=foreign)), PermissionDeniedError), foreign
    # a path spelled otherwise than the input it produced (normalised parameters): the canonical path is
    # checked as well, so a deny written on it still bites
    await rule(sdk, "posters", "api", [("route__path", "equals", "/api/v1/requests/req-1")], ("GET",), "deny")
    show = get_spec("get_request").build({"request_id": "req-1"})
    err = await failure(engine.execute(show, who, route_path="/api/v1/requests/REQ-1"))
    assert isinstance(err, PermissionDeniedError)
