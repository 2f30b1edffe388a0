"""The console's HTTP edges without a browser: headers, assets, the sign-in redirect, oversized and foreign forms."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

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
