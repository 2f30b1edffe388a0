"""CORS on the REST API (`api.cors`): none by default; preflight answered before authentication; an allowed
origin gets its answers' headers (credentials only when configured); another origin gets none."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pluginsdk import ConfigurationError
from pluginsdk.config import load_settings
from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server

ALLOWED = "http://127.0.0.1:5173"
PREFLIGHT = {"access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type"}


def _served(tmp_path: Path, **cors: object) -> Iterator[tuple[str, str]]:
    config = base_config(tmp_path)
    if cors:
        config["api"] = {**config.get("api", {}), "cors": cors}
    key = asyncio.run(admin_key(config))
    with running_server(config) as url:
        yield url, key


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    yield from _served(tmp_path, allow_origins=[ALLOWED])


def test_no_cors_header_by_default(tmp_path: Path) -> None:
    for url, key in _served(tmp_path):
        pre = httpx.options(f"{url}/user-roles", headers={"origin": ALLOWED, **PREFLIGHT})
        assert pre.status_code == 204 and not any(h.startswith("access-control-") for h in pre.headers)
        got = httpx.get(f"{url}/roles", headers={"origin": ALLOWED, "authorization": f"Bearer {key}"})
        assert got.status_code == 200 and "access-control-allow-origin" not in got.headers


def test_preflight_is_answered_before_authentication_for_an_allowed_origin(served: tuple[str, str]) -> None:
    url, key = served
    pre = httpx.options(f"{url}/user-roles", headers={"origin": ALLOWED, **PREFLIGHT})  # no credential
    assert pre.status_code == 204, pre.text
    assert pre.headers["access-control-allow-origin"] == ALLOWED and pre.headers["vary"] == "Origin"
    assert set(pre.headers["access-control-allow-methods"].split(", ")) >= {"GET", "POST", "PUT", "DELETE"}
    assert pre.headers["access-control-allow-headers"] == "authorization, content-type"
    assert "access-control-allow-credentials" not in pre.headers  # none unless configured
    got = httpx.get(f"{url}/roles", headers={"origin": ALLOWED, "authorization": f"Bearer {key}"})
    assert got.status_code == 200 and got.headers["access-control-allow-origin"] == ALLOWED
    assert "x-request-id" in got.headers["access-control-expose-headers"]
    refused = httpx.get(f"{url}/roles", headers={"origin": ALLOWED})  # its 401 is readable by the app too
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == ALLOWED


def test_another_origin_gets_no_cors_header(served: tuple[str, str]) -> None:
    url, key = served
    for origin in ("http://evil.example", "http://127.0.0.1:5174", "null", ALLOWED + "/"):
        pre = httpx.options(f"{url}/user-roles", headers={"origin": origin, **PREFLIGHT})
        assert "access-control-allow-origin" not in pre.headers, origin
        got = httpx.get(f"{url}/roles", headers={"origin": origin, "authorization": f"Bearer {key}"})
        assert "access-control-allow-origin" not in got.headers and got.headers["vary"] == "Origin", origin


def test_credentials_only_when_configured_and_never_to_anyone(tmp_path: Path) -> None:
    for url, _ in _served(tmp_path, allow_origins=[ALLOWED], allow_credentials=True):
        pre = httpx.options(f"{url}/roles", headers={"origin": ALLOWED, **PREFLIGHT})
        assert pre.headers["access-control-allow-credentials"] == "true"
        other = httpx.options(f"{url}/roles", headers={"origin": "http://evil.example", **PREFLIGHT})
        assert "access-control-allow-credentials" not in other.headers
    with pytest.raises(ConfigurationError, match="any site"):
        load_settings(config={"api": {"cors": {"allow_origins": ["*"], "allow_credentials": True}}})
    with pytest.raises(ConfigurationError, match="not an origin"):
        load_settings(config={"api": {"cors": {"allow_origins": ["http://app.example/path"]}}})
