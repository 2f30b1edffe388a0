"""The console's HTTP edges without a browser: headers, assets, the sign-in redirect, oversized and foreign forms."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, str]]:
    config = base_config(tmp_path)
    key = asyncio.run(admin_key(config))
    with running_server(config) as url, httpx.Client(base_url=url) as client:
        yield client, key


def _sign_in(client: httpx.Client, key: str, next_page: str = "/ui/") -> httpx.Response:
    form = client.get("/ui/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token
    return client.post("/ui/login", data={"csrf": token.group(1), "api_key": key, "next": next_page})


def test_pages_carry_the_security_headers_and_assets_are_served_from_the_package(
    served: tuple[httpx.Client, str],
) -> None:
    client, _ = served
    page = client.get("/ui/login")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"
    assert "<script" not in page.text.replace('<script src="/ui/static/console.js" defer></script>', "")
    assert client.get("/ui/static/console.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/ui/static/console.css").status_code == 200
    assert client.get("/ui/static/..%2F..%2Fopenapi.json").status_code == 404
    assert client.get("/ui/static/app.py").status_code == 404
    assert client.get("/ui/templates").status_code == 303  # not signed in: to the sign-in page
    assert client.post("/ui/templates", data={"template_id": "x"}).status_code == 401


def test_sign_in_goes_back_only_to_a_console_page(served: tuple[httpx.Client, str]) -> None:
    client, key = served
    assert _sign_in(client, key, "//evil.example/ui/").headers["location"] == "/ui/"
    assert _sign_in(client, key, "https://evil.example/").headers["location"] == "/ui/"
    assert _sign_in(client, key, "/ui/machines").headers["location"] == "/ui/machines"


def test_a_wrong_key_a_missing_sign_in_token_and_foreign_or_huge_forms_are_refused(
    served: tuple[httpx.Client, str],
) -> None:
    client, key = served
    assert client.post("/ui/login", data={"api_key": key}).status_code == 403  # no sign-in token
    form = client.get("/ui/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token
    wrong = client.post("/ui/login", data={"csrf": token.group(1), "api_key": "psdk_wrong"})
    assert wrong.status_code == 401 and "pluginsdk_console" not in wrong.headers.get("set-cookie", "")
    assert _sign_in(client, key).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/templates").text)
    assert csrf
    huge = client.post("/ui/templates", data={"csrf": csrf.group(1), "name": "x" * 70000})
    assert huge.status_code == 413
    foreign = client.post("/ui/templates", data={"csrf": csrf.group(1)}, headers={"origin": "http://evil.example"})
    assert foreign.status_code == 403
    multipart = client.post("/ui/templates", files={"f": b"x"})
    assert multipart.status_code == 415


def _signed_in_token(client: httpx.Client, key: str) -> str:
    assert _sign_in(client, key).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/templates").text)
    assert csrf
    return csrf.group(1)


def test_malformed_imports_edits_and_filters_are_4xx_pages_never_500(served: tuple[httpx.Client, str]) -> None:
    client, key = served
    token = _signed_in_token(client, key)
    imports = {
        "not json": 400,
        "[]": 400,
        "[1, 2]": 400,
        '"text"': 400,
        "[" + ",".join(['{"template_id": "x"}'] * 201) + "]": 400,
        '{"templates": [{"template_id": "ok-1", "image_id": "i"}]}': 200,
    }
    for text, status in imports.items():
        answer = client.post("/ui/template-import", data={"csrf": token, "templates": text, "action": "import"})
        assert answer.status_code == status, (text[:40], answer.text[:300])
        assert answer.headers["content-type"].startswith("text/html")
    assert client.get("/ui/templates/ok-1").status_code == 200
    for data in ({"max_number": "many"}, {"tags": "{not json"}, {"image_id": "i", "tags": '["a list"]'}):
        answer = client.post("/ui/templates/ok-1", data={"csrf": token, "action": "save", **data})
        assert answer.status_code == 400, (data, answer.text[:300])
    assert client.get("/ui/templates/no-such").status_code == 404
    assert client.get("/ui/roles/no-such").status_code == 404
    assert client.get("/ui/requests/req-none/events").status_code == 404
    assert client.get("/ui/audit/export", params={"target_type": "<bad>"}).status_code == 400
    assert client.get("/ui/audit/export", params={"since": "yesterday"}).status_code == 400
    unassign = client.post(
        "/ui/user-roles/unassign", data={"csrf": token, "user_id": "x", "role_name": "admin", "confirm": "yes"}
    )
    assert unassign.status_code == 400
    assert client.post("/ui/users", data={"csrf": token, "user_id": "u", "email": "u@x"}).status_code < 500


def test_json_nested_past_the_limit_is_refused_by_name(served: tuple[httpx.Client, str]) -> None:
    """The console's JSON fields are parsed as every door parses caller JSON: past `MAX_DEPTH`, a 400 page."""
    from pluginsdk.files import MAX_DEPTH, TOO_DEEP

    client, key = served
    token = _signed_in_token(client, key)

    def document(levels: int) -> str:  # an import of one template whose tags make the whole `levels` deep
        tags = "{" + '"a": {' * (levels - 4) + "}" * (levels - 4) + "}"
        return '{"templates": [{"template_id": "d-1", "image_id": "i", "tags": ' + tags + "}]}"

    for text in ("[" * 5000 + "]" * 5000, document(MAX_DEPTH + 1)):
        answer = client.post("/ui/template-import", data={"csrf": token, "templates": text, "action": "import"})
        assert answer.status_code == 400 and TOO_DEEP in answer.text, answer.text[:300]
    answer = client.post(
        "/ui/template-import", data={"csrf": token, "templates": document(MAX_DEPTH), "action": "import"}
    )
    assert answer.status_code != 500 and TOO_DEEP not in answer.text, answer.text[:300]
    ok = '{"templates": [{"template_id": "d-1", "image_id": "i"}]}'
    assert (
        client.post("/ui/template-import", data={"csrf": token, "templates": ok, "action": "import"}).status_code == 200
    )
    deep_tags = "{" + '"a": {' * MAX_DEPTH + "}" * MAX_DEPTH + "}"
    answer = client.post(
        "/ui/templates/d-1", data={"csrf": token, "action": "save", "image_id": "i", "tags": deep_tags}
    )
    assert answer.status_code == 400 and TOO_DEEP in answer.text, answer.text[:300]


def test_a_caller_without_audit_rights_cannot_export_it(tmp_path: Path) -> None:
    from pluginsdk import PluginSDK

    config = base_config(tmp_path)

    async def keys() -> tuple[str, str]:
        async with PluginSDK(config=config) as sdk:
            admin = await sdk.create_api_key(api_key_name="a", description="admin key", user_id="administrator")
            await sdk.create_role(role_name="bystander", description="no constraint names it")
            await sdk.create_user_roles(user_id="nobody", role_name=["bystander"])
            nobody = await sdk.create_api_key(api_key_name="n", description="no roles", user_id="nobody")
            return str(admin.api_key), str(nobody.api_key)

    admin, nobody = asyncio.run(keys())
    with running_server(config) as url, httpx.Client(base_url=url) as client:
        _sign_in(client, nobody)
        refused = client.get("/ui/audit/export")
        assert refused.status_code == 403 and refused.headers["content-type"].startswith("text/html")
        client.cookies.clear()
        _sign_in(client, admin)
        export = client.get("/ui/audit/export", params={"actor": "administrator"})
        assert export.status_code == 200 and export.headers["content-type"] == "application/x-ndjson"
        records = [json.loads(line) for line in export.text.splitlines()]
        assert records and {r["actor"] for r in records} == {"administrator"}
        assert any(r["target_id"] == "n" or r["action"] == "create_api_key" for r in records)


def _dashboard(config: dict[str, Any], key: str) -> str:
    """The dashboard's HTML as the holder of `key` sees it, from a server on `config`."""
    with running_server(config) as url, httpx.Client(base_url=url) as client:
        _sign_in(client, key)
        return client.get("/ui/").text


def test_the_dashboard_shows_machines_by_provider_and_the_candidates_held_back(tmp_path: Path) -> None:
    from pluginsdk import PluginSDK

    fast = {"type": "local", "boot_delay": 0.05, "terminate_delay": 0.05, "seed": 7}
    provider = {"instances": {"east": {**fast, "capacity_errors": ["m5.large"]}, "west": fast}}
    config = base_config(tmp_path, provider=provider)

    async def prepare() -> str:
        async with PluginSDK(config=config) as sdk:
            await sdk.create_template(
                template_id="burst",
                image_id="ami-1",
                instance_type="m5.large",
                offerings=[{"provider": "east"}, {"provider": "west"}],
            )
            created = await sdk.create_request("burst", 2, wait=True, timeout=30)
            assert created.status == "completed"
            key = await sdk.create_api_key(api_key_name="a", description="admin", user_id="administrator")
            return str(key.api_key)

    dashboard = _dashboard(config, asyncio.run(prepare()))
    by_provider = dashboard.split("Machines by provider", 1)[1].split("</table>", 1)[0]
    assert re.search(r"<td>west</td><td>local</td><td>[^<]*</td><td>2</td>", by_provider), by_provider
    capacity = dashboard.split("<caption>Capacity", 1)[1].split("</table>", 1)[0]
    assert "east/m5.large/*/ondemand" in capacity and "cooling" in capacity, capacity
    assert "Protected templates: none." in dashboard


def test_the_dashboard_shows_a_template_its_bootstrap_failures_protect(tmp_path: Path) -> None:
    from pluginsdk import PluginSDK

    never_ready = {"local": {"boot_delay": 0.05, "terminate_delay": 0.05, "seed": 7, "ready_rate": 0.0}}
    config = base_config(tmp_path, provider=never_ready)

    async def prepare() -> str:
        async with PluginSDK(config=config) as sdk:
            boot = {"boot": {"timeout_seconds": 0.3, "max_failures": 1}}
            await sdk.create_template(template_id="flaky-boot", image_id="ami-1", configuration=boot)
            await sdk.create_template(template_id="fine", image_id="ami-1")
            created = await sdk.create_request("flaky-boot", 1)
            deadline = time.monotonic() + 20
            while not (await sdk.get_request(created.request_id or "")).status.terminal:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert set((await sdk.get_providers_status()).protected) == {"flaky-boot"}
            key = await sdk.create_api_key(api_key_name="a", description="admin", user_id="administrator")
            return str(key.api_key)

    dashboard = _dashboard(config, asyncio.run(prepare()))
    protected = dashboard.split("<caption>Protected templates", 1)[1].split("</table>", 1)[0]
    assert re.search(r"<td>flaky-boot</td><td>[^<]*1 bootstrap failure in a row", protected), protected
    assert "<td>fine</td>" not in protected


def test_without_the_user_pool_the_sign_in_page_offers_api_keys_only(served: tuple[httpx.Client, str]) -> None:
    client, _ = served
    page = client.get("/ui/login")
    assert page.status_code == 200
    assert 'name="password"' not in page.text and 'name="username"' not in page.text
    assert 'name="api_key"' in page.text and "Sign in with an API key." in page.text


def test_without_the_user_pool_the_users_page_is_not_offered(served: tuple[httpx.Client, str]) -> None:
    client, key = served
    assert _sign_in(client, key).status_code == 303
    nav = re.search(r"<nav aria-label=\"Main\">(.*?)</nav>", client.get("/ui/").text, re.S)
    assert nav and 'href="/ui/templates"' in nav.group(1)
    assert 'href="/ui/users"' not in nav.group(1) and 'href="/ui/mfa"' not in nav.group(1)
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/").text)
    assert token
    wrong = client.post("/ui/ops", data={"csrf": token.group(1)})  # a page that takes no form
    assert wrong.status_code == 405 and wrong.headers["content-security-policy"].startswith("default-src 'none'")
    assert client.get("/ui/no-such-page").status_code == 404
    assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"
