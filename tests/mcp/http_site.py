"""A real server for the MCP-over-HTTP tests: uvicorn on a free loopback port serving /mcp and the OAuth
endpoints, with the console tests' users (an administrator key, a read-only `viewer` key, the managed-pool
`operator` with a password, `guarded` whose sign-in needs a TOTP code), and the browser-less OAuth flow a
test drives by hand (registration, PKCE, the sign-in form, the code)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pyotp

from tests.auth.conftest import Mailbox, managed_app
from tests.console.conftest import PASSWORD
from tests.support.backends import base_config

SLOW = {"local": {"boot_delay": 1.2, "terminate_delay": 0.05, "seed": 7}}
"""Machines boot in 0.6-1.8 s: a waiting request passes through several running counts (progress)."""
REDIRECT = "http://127.0.0.1:9/callback"


@dataclass
class McpSite:
    url: str
    app: Any
    admin_key: str
    viewer_key: str
    operator: str
    totp_secret: str

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp"

    def totp(self) -> str:
        return pyotp.TOTP(self.totp_secret).now()


def config_for(tmp_path: Path, box: Mailbox, **extra: Any) -> dict[str, Any]:
    return base_config(tmp_path, app=managed_app(box), provider=SLOW, **extra)


# -- the OAuth flow by hand -------------------------------------------------------------------------------------


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(http: httpx.Client, url: str, **metadata: Any) -> dict[str, Any]:
    body = {"redirect_uris": [REDIRECT], "client_name": "attacker-test", "grant_types": ["authorization_code"]}
    answer = http.post(f"{url}/register", json={**body, **metadata})
    assert answer.status_code == 201, answer.text
    client: dict[str, Any] = answer.json()
    return client


def authorize_params(site: McpSite, client: dict[str, Any], challenge: str, **extra: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-" + secrets.token_hex(4),
        "resource": site.mcp,
        **extra,
    }


def sign_in(http: httpx.Client, site: McpSite, params: dict[str, str], **form: str) -> httpx.Response:
    """GET /authorize, follow to the sign-in page, post the form as `operator` (or `form`'s user): the answer."""
    page = http.get(f"{site.url}/authorize", params=params, follow_redirects=True)
    assert page.status_code == 200, page.text
    csrf = re.search(r'name="csrf" value="([^"]*)"', page.text)
    request = re.search(r'name="request" value="([^"]*)"', page.text)
    assert csrf and request
    data = {"csrf": csrf[1], "request": request[1], "username": site.operator, "password": PASSWORD, **form}
    return http.post(page.url, data=data, follow_redirects=False)


def code_for(http: httpx.Client, site: McpSite, client: dict[str, Any], challenge: str, **form: str) -> tuple[str, str]:
    """(code, state) of a completed sign-in."""
    params = authorize_params(site, client, challenge)
    answer = sign_in(http, site, params, **form)
    assert answer.status_code == 302, answer.text
    location = urlsplit(answer.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    query = parse_qs(location.query)
    assert query["state"] == [params["state"]]
    return query["code"][0], params["state"]


def exchange(http: httpx.Client, url: str, client: dict[str, Any], code: str, verifier: str) -> httpx.Response:
    return http.post(
        f"{url}/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client["client_id"],
            "client_secret": client.get("client_secret") or "",
            "code_verifier": verifier,
        },
    )


def access_token(http: httpx.Client, site: McpSite, **form: str) -> str:
    client = register(http, site.url)
    verifier, challenge = pkce()
    code, _ = code_for(http, site, client, challenge, **form)
    answer = exchange(http, site.url, client, code, verifier)
    assert answer.status_code == 200, answer.text
    token: str = answer.json()["access_token"]
    return token
