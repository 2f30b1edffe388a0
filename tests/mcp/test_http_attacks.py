"""/mcp and its OAuth endpoints under attack, over real HTTP (`http_site.py`): missing, foreign and expired
credentials; forged PKCE, reused codes, unregistered redirect URIs, other audiences; no session state (each
request runs as its own caller); huge and malformed bodies (4xx, never 500); secrets never stored in the clear."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pluginsdk import PluginSDK
from pluginsdk.config import load_settings
from tests.auth.federation.test_external_oauth import IdP, external_app
from tests.console.conftest import PASSWORD
from tests.mcp.http_site import (
    REDIRECT,
    McpSite,
    access_token,
    authorize_params,
    code_for,
    exchange,
    pkce,
    register,
    sign_in,
)
from tests.support.backends import base_config
from tests.support.remote import serving

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def rpc(answer: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer (JSON, or the last `data:` line of an event stream)."""
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        lines = [line[5:].strip() for line in answer.text.splitlines() if line.startswith("data:")]
        message: dict[str, Any] = json.loads(lines[-1])
        return message
    body: dict[str, Any] = answer.json()
    return body


def session(http: httpx.Client, site: McpSite, credential: str) -> str:
    """The MCP handshake with `credential`: /mcp is stateless (any server answers any request), so it opens
    no session: the id is empty."""
    headers = {**ACCEPT, "authorization": f"Bearer {credential}"}
    opened = http.post(site.mcp, json=INIT, headers=headers)
    assert opened.status_code == 200, opened.text
    assert "mcp-session-id" not in opened.headers
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    sent = http.post(site.mcp, json=note, headers={**headers, "mcp-protocol-version": "2025-11-25"})
    assert sent.status_code == 202, sent.text
    return ""


def call(http: httpx.Client, site: McpSite, credential: str, sid: str, method: str, **params: Any) -> httpx.Response:
    headers = {**ACCEPT, "authorization": f"Bearer {credential}", "mcp-protocol-version": "2025-11-25"}
    if sid:
        headers["mcp-session-id"] = sid
    return http.post(site.mcp, json={"jsonrpc": "2.0", "id": 2, "method": method, "params": params}, headers=headers)


def stored(site: McpSite, sql: str) -> list[tuple[Any, ...]]:
    """Rows of the site's SQLite store (what a copy of it would give away)."""
    path = site.app.remote_mcp._app.backend.held().db.url
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def challenge_of(answer: httpx.Response, site: McpSite) -> str:
    assert answer.status_code == 401, answer.text
    header = answer.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    assert f'resource_metadata="{site.url}/.well-known/oauth-protected-resource/mcp"' in header
    return header


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def test_no_credential_is_401_pointing_at_the_resource_metadata(http: httpx.Client, site: McpSite) -> None:
    header = challenge_of(http.post(site.mcp, json=INIT, headers=ACCEPT), site)
    assert "error=" not in header  # no credential came: no error code (RFC 6750 3.1)
    metadata = http.get(f"{site.url}/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == site.mcp and metadata["authorization_servers"] == [f"{site.url}/"]
    assert http.get(f"{site.url}/.well-known/oauth-protected-resource").json() == metadata
    server = http.get(f"{site.url}/.well-known/oauth-authorization-server").json()
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["registration_endpoint"] == f"{site.url}/register"
    for bad in ("Bearer nonsense", "Bearer psdk_" + "x" * 43, "Basic dXNlcjpwYXNz"):
        refused = http.post(site.mcp, json=INIT, headers={**ACCEPT, "authorization": bad})
        assert 'error="invalid_token"' in challenge_of(refused, site)


def test_an_expired_token_is_401(http: httpx.Client, site: McpSite, monkeypatch: pytest.MonkeyPatch) -> None:
    token = access_token(http, site)
    session(http, site, token)  # live
    held = site.app.remote_mcp._app.backend.held()
    monkeypatch.setattr(held, "clock", lambda: time.time() + 901)  # past mcp.token_seconds (900)
    refused = http.post(site.mcp, json=INIT, headers={**ACCEPT, "authorization": f"Bearer {token}"})
    assert 'error="invalid_token"' in challenge_of(refused, site)


def test_the_token_is_for_mcp_only(http: httpx.Client, site: McpSite) -> None:
    """Audience-bound: a token for another resource is never issued, and this one opens no REST route."""
    client = register(http, site.url)
    _, challenge = pkce()
    other = authorize_params(site, client, challenge, resource="http://127.0.0.1:1/mcp")
    refused = http.get(f"{site.url}/authorize", params=other)
    assert refused.status_code == 302
    query = parse_qs(urlsplit(refused.headers["location"]).query)
    assert query["error"] == ["invalid_target"] and query["state"] == [other["state"]]
    token = access_token(http, site)
    rest = http.get(f"{site.url}/api/v1/templates", headers={"authorization": f"Bearer {token}"})
    assert rest.status_code == 401


def test_pkce_codes_and_redirects(http: httpx.Client, site: McpSite) -> None:
    client = register(http, site.url)
    verifier, challenge = pkce()
    code, _ = code_for(http, site, client, challenge)
    forged = exchange(http, site.url, client, code, verifier[::-1])
    assert forged.status_code == 400 and forged.json()["error"] == "invalid_grant"
    burnt = exchange(http, site.url, client, code, verifier)  # a code answers once, even a failed exchange
    assert burnt.status_code == 400 and burnt.json()["error"] == "invalid_grant"

    code, _ = code_for(http, site, client, challenge)
    assert exchange(http, site.url, client, code, verifier).status_code == 200
    reused = exchange(http, site.url, client, code, verifier)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"

    plain = authorize_params(site, client, verifier, code_challenge_method="plain")
    assert http.get(f"{site.url}/authorize", params=plain).status_code in (302, 400)
    assert "code=" not in http.get(f"{site.url}/authorize", params=plain).headers.get("location", "")

    for uri in ("http://127.0.0.1:9/other", "http://127.0.0.1:9/callback/", "http://evil.example/callback"):
        unregistered = authorize_params(site, client, challenge, redirect_uri=uri)
        answer = http.get(f"{site.url}/authorize", params=unregistered)
        assert answer.status_code == 400 and "location" not in answer.headers, uri

    other = register(http, site.url)  # a code is for the client it was issued to
    code, _ = code_for(http, site, client, challenge)
    assert exchange(http, site.url, other, code, verifier).json()["error"] == "invalid_grant"


@pytest.mark.parametrize(
    ("uri", "allowed"),
    [
        ("https://assistant.example/cb", True),
        ("http://127.0.0.1:33418/cb", True),
        ("http://[::1]:8/cb", True),
        ("http://localhost/cb", True),
        ("http://assistant.example/cb", False),
        ("http://127.0.0.1.evil.example/cb", False),
        ("javascript:alert(1)", False),
        ("custom-app://cb", False),
        ("https://assistant.example/cb#frag", False),
    ],
)
def test_redirect_uris_are_https_or_loopback(http: httpx.Client, site: McpSite, uri: str, allowed: bool) -> None:
    answer = http.post(f"{site.url}/register", json={"redirect_uris": [uri], "grant_types": ["authorization_code"]})
    if allowed:
        assert answer.status_code == 201, answer.text
    else:
        assert answer.status_code == 400 and answer.json()["error"] in (
            "invalid_redirect_uri",
            "invalid_client_metadata",
        )


def test_a_public_client_signs_in_with_pkce_alone(http: httpx.Client, site: McpSite) -> None:
    server = http.get(f"{site.url}/.well-known/oauth-authorization-server").json()
    assert "none" in server["token_endpoint_auth_methods_supported"]
    client = register(http, site.url, token_endpoint_auth_method="none")
    assert "client_secret" not in client or not client["client_secret"]
    verifier, challenge = pkce()
    code, _ = code_for(http, site, client, challenge)
    forged = exchange(http, site.url, client, code, verifier[::-1])  # without a secret, PKCE still binds the code
    assert forged.status_code == 400
    code, _ = code_for(http, site, client, challenge)
    answer = exchange(http, site.url, client, code, verifier)
    assert answer.status_code == 200, answer.text
    session(http, site, answer.json()["access_token"])


def test_a_browser_origin_must_be_allowed(http: httpx.Client, site: McpSite) -> None:
    """MCP's transport spec: /mcp validates `Origin` (DNS rebinding); a request without one (not a browser) is
    not affected, the server's own origin is allowed, others answer 403 in the envelope."""
    headers = {**ACCEPT, "authorization": f"Bearer {site.admin_key}"}
    for origin in ("https://evil.example", "http://127.0.0.1:1", "null"):
        refused = http.post(site.mcp, json=INIT, headers={**headers, "origin": origin})
        assert refused.status_code == 403, origin
        assert refused.json()["error_code"] == "FORBIDDEN"
    assert http.post(site.mcp, json=INIT, headers={**headers, "origin": site.url}).status_code == 200
    assert http.post(site.mcp, json=INIT, headers=headers).status_code == 200
    anonymous = http.post(site.mcp, json=INIT, headers={**ACCEPT, "origin": "https://evil.example"})
    assert anonymous.status_code == 403  # before any credential is looked at


async def test_allowed_origins_are_configured(tmp_path: Path) -> None:
    from pluginsdk.server import create_app

    allowed = {"allowed_origins": ["https://assistant.example"], "public_url": "https://tools.example.org/base"}
    settings = load_settings(config=base_config(tmp_path, mcp=allowed), environ={})
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        ok = await client.post("/mcp", json=INIT, headers={**ACCEPT, "origin": "https://assistant.example"})
        assert ok.status_code == 401  # allowed through to authentication
        other = await client.post("/mcp", json=INIT, headers={**ACCEPT, "origin": "https://other.example"})
        assert other.status_code == 403
        own = await client.post("/mcp", json=INIT, headers={**ACCEPT, "origin": "https://tools.example.org"})
        assert own.status_code == 401  # the public URL's origin is the server's own (its path aside)


def refresh(http: httpx.Client, url: str, client: dict[str, Any], token: str) -> httpx.Response:
    data = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client["client_id"]}
    return http.post(f"{url}/token", data={**data, "client_secret": client.get("client_secret") or ""})


def test_refresh_tokens_rotate_and_end_with_the_sign_in(http: httpx.Client, site: McpSite) -> None:
    both = ["authorization_code", "refresh_token"]
    plain = register(http, site.url)  # registered for codes only: no refresh token
    verifier, challenge = pkce()
    code, _ = code_for(http, site, plain, challenge)
    assert "refresh_token" not in exchange(http, site.url, plain, code, verifier).json()

    client = register(http, site.url, grant_types=both)
    code, _ = code_for(http, site, client, challenge)
    first = exchange(http, site.url, client, code, verifier).json()
    renewed = refresh(http, site.url, client, first["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    second = renewed.json()
    assert {second["access_token"], second["refresh_token"]}.isdisjoint(first.values())
    session(http, site, second["access_token"])  # the new token opens /mcp
    spent = refresh(http, site.url, client, first["refresh_token"])  # rotated: a refresh token answers once
    assert spent.status_code == 400 and spent.json()["error"] == "invalid_grant"
    # ... and a spent one presented again ends its whole family (OAuth 2.1): the tokens it was rotated into too
    replayed = http.post(site.mcp, json=INIT, headers={**ACCEPT, "authorization": f"Bearer {second['access_token']}"})
    assert 'error="invalid_token"' in challenge_of(replayed, site)
    assert refresh(http, site.url, client, second["refresh_token"]).json()["error"] == "invalid_grant"

    code, _ = code_for(http, site, client, challenge)
    second = exchange(http, site.url, client, code, verifier).json()  # a new sign-in: a new family
    session(http, site, second["access_token"])
    other = register(http, site.url, grant_types=both)
    assert refresh(http, site.url, other, second["refresh_token"]).json()["error"] == "invalid_grant"

    reset = http.post(  # the administrator resets the user's password: their sessions end
        f"{site.url}/user/managed/{site.operator}/resetPassword",
        json={"confirmReset": True},
        headers={"authorization": f"Bearer {site.admin_key}"},
    )
    assert reset.status_code == 200, reset.text
    ended = refresh(http, site.url, client, second["refresh_token"])
    assert ended.status_code == 400 and ended.json()["error"] == "invalid_grant"
    refused = http.post(site.mcp, json=INIT, headers={**ACCEPT, "authorization": f"Bearer {second['access_token']}"})
    assert 'error="invalid_token"' in challenge_of(refused, site)


def test_client_secrets_are_checked_and_stored_hashed(http: httpx.Client, site: McpSite) -> None:
    client = register(http, site.url)
    (data,) = stored(site, f"SELECT data FROM oauth_clients WHERE client_id = '{client['client_id']}'")[0]
    kept_secret = json.loads(data)["client_secret"]
    assert kept_secret == hashlib.sha256(client["client_secret"].encode()).hexdigest()
    verifier, challenge = pkce()
    for secret in ("wrong", kept_secret):  # presenting the stored hash is no better than a guess
        code, _ = code_for(http, site, client, challenge)
        answer = exchange(http, site.url, {**client, "client_secret": secret}, code, verifier)
        assert answer.status_code == 401 and answer.json()["error"] == "invalid_client"
    code, _ = code_for(http, site, client, challenge)
    basic = http.post(
        f"{site.url}/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client["client_id"],
            "code_verifier": verifier,
        },
        auth=(client["client_id"], client["client_secret"]),
    )
    assert basic.status_code == 401  # registered for client_secret_post: Basic is not its method
    token = access_token(http, site)
    both = register(http, site.url, grant_types=["authorization_code", "refresh_token"])
    code, _ = code_for(http, site, both, challenge)
    tokens = exchange(http, site.url, both, code, verifier).json()
    kept = repr(stored(site, "SELECT * FROM oauth_grants")) + repr(stored(site, "SELECT * FROM oauth_clients"))
    for secret in (token, tokens["access_token"], tokens["refresh_token"], client["client_secret"], "Bearer ey"):
        assert secret not in kept


def test_sign_in_form_refusals(http: httpx.Client, site: McpSite) -> None:
    client = register(http, site.url)
    _, challenge = pkce()
    params = authorize_params(site, client, challenge)
    wrong = sign_in(http, site, params, password="not-the-password")
    assert wrong.status_code == 401 and "location" not in wrong.headers
    no_code = sign_in(http, site, params, username="guarded")
    assert no_code.status_code == 401 and "authenticator" in no_code.text
    page = http.get(f"{site.url}/authorize", params=params, follow_redirects=True)
    request = re.search(r'name="request" value="([^"]*)"', page.text)
    assert request is not None
    form = {"csrf": "forged", "request": request[1], "username": "operator", "password": PASSWORD}
    forged = http.post(page.url, data=form)
    assert forged.status_code == 403 and "location" not in forged.headers
    assert http.get(f"{site.url}/oauth/signin", params={"request": "unknown"}).status_code == 400


def test_answers_json_unless_progress_was_asked(http: httpx.Client, site: McpSite) -> None:
    """One JSON body for a call that asked for no progress, the event stream for one that did (the fence of
    `pluginsdk/server/remote_mcp/answers.py`: it fails if the SDK stops taking the per-request choice)."""
    sid = session(http, site, site.admin_key)
    plain = call(http, site, site.admin_key, sid, "tools/call", name="list_templates", arguments={})
    assert plain.headers["content-type"].startswith("application/json"), plain.headers
    assert rpc(plain)["result"]["isError"] is False
    meta = {"progressToken": "p1"}
    streamed = call(http, site, site.admin_key, sid, "tools/call", name="list_templates", arguments={}, _meta=meta)
    assert streamed.headers["content-type"].startswith("text/event-stream"), streamed.headers
    assert rpc(streamed)["result"]["isError"] is False


def test_arguments_nested_past_the_limit_are_refused_by_the_engine(http: httpx.Client, site: McpSite) -> None:
    """The MCP SDK parses the message; the operation refuses a value nested past `MAX_DEPTH`, in the words of
    every door (the operation's input is the first level)."""
    from pluginsdk.files import MAX_DEPTH, TOO_DEEP

    def create(template_id: str, levels: int) -> dict[str, Any]:
        configuration: dict[str, Any] = {}
        for _ in range(levels - 2):
            configuration = {"a": configuration}
        arguments = {"template_id": template_id, "image_id": "ami-1", "configuration": configuration}
        return dict(
            rpc(call(http, site, site.admin_key, "", "tools/call", name="create_template", arguments=arguments))
        )

    assert create("t-at-limit", MAX_DEPTH)["result"]["isError"] is False
    refused = create("t-too-deep", MAX_DEPTH + 1)["result"]
    assert refused["isError"] is True and TOO_DEEP in refused["content"][0]["text"]


def test_each_request_runs_as_its_own_caller(http: httpx.Client, site: McpSite) -> None:
    """Stateless: no session id to steal or replay; a session id sent anyway opens nothing, and each call is
    authorized as the credential it carries."""
    session(http, site, site.admin_key)
    create = {"name": "create_template", "arguments": {"template_id": "t-own", "image_id": "ami-1"}}
    assert rpc(call(http, site, site.admin_key, "", "tools/call", **create))["result"]["isError"] is False
    create["arguments"] = {"template_id": "t-viewer", "image_id": "ami-1"}
    denied = rpc(call(http, site, site.viewer_key, "made-up-session", "tools/call", **create))["result"]
    assert denied["isError"] is True and "PermissionDenied" in denied["content"][0]["text"]


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b"[]",
        b'"x"',
        b'{"jsonrpc": "2.0", "id": 1, "method": 7}',
        b"\xff\xfe",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x" * 100}}).encode(),
        b"[" * 5000 + b"]" * 5000,
    ],
    ids=["truncated", "array", "string", "bad-method", "not-utf8", "no-session", "too-deep"],
)
def test_malformed_bodies_are_4xx(http: httpx.Client, site: McpSite, body: bytes) -> None:
    headers = {**ACCEPT, "authorization": f"Bearer {site.admin_key}"}
    for extra in ({}, {"mcp-protocol-version": "2025-11-25"}):
        answer = http.post(site.mcp, content=body, headers={**headers, **extra})
        refused = 400 <= answer.status_code < 500 or "error" in rpc(answer) or rpc(answer)["result"]["isError"]
        assert refused, answer.text
    for path in ("/token", "/register"):
        assert 400 <= http.post(f"{site.url}{path}", content=body, headers=ACCEPT).status_code < 500


def test_huge_bodies_are_413(http: httpx.Client, site: McpSite) -> None:
    huge = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": "' + b"a" * (2 << 20) + b'"}}'
    headers = {**ACCEPT, "authorization": f"Bearer {site.admin_key}"}
    assert http.post(site.mcp, content=huge, headers=headers).status_code == 413
    for path in ("/token", "/register"):
        assert http.post(f"{site.url}{path}", content=huge, headers=ACCEPT).status_code == 413
    big_form = {"csrf": "x", "request": "y", "username": "a" * (64 << 10)}
    assert http.post(f"{site.url}/oauth/signin", data=big_form).status_code == 413


# -- the configured external IdP's tokens ---------------------------------------------------------------------------


@pytest.fixture
def idp_site(tmp_path: Path, idp: IdP) -> Iterator[str]:
    import asyncio

    from pluginsdk.server import create_app

    config = base_config(tmp_path, app=external_app(idp))

    async def roles() -> None:
        async with PluginSDK(config=config) as sdk:
            await sdk.create_user_roles("ivy", ["basicReadOnly"])

    asyncio.run(roles())
    with serving(create_app(load_settings(config=config, environ={}))) as url:
        yield url


@pytest.mark.parametrize(
    ("claims", "accepted"),
    [
        ({}, True),
        ({"aud": "other-client"}, False),
        ({"exp": int(time.time()) - 120}, False),  # past the default 60 s clock skew
        ({"iss": "https://evil"}, False),
    ],
    ids=["valid", "other-audience", "expired", "other-issuer"],
)
def test_external_idp_tokens(idp_site: str, idp: IdP, claims: dict[str, Any], accepted: bool) -> None:
    headers = {**ACCEPT, "authorization": f"Bearer {idp.token(**claims)}"}
    answer = httpx.post(f"{idp_site}/mcp", json=INIT, headers=headers)
    if not accepted:
        assert answer.status_code == 401 and 'error="invalid_token"' in answer.headers["www-authenticate"]
        assert (
            f'resource_metadata="{idp_site}/.well-known/oauth-protected-resource/mcp"'
            in answer.headers["www-authenticate"]
        )
        return
    assert answer.status_code == 200, answer.text
    headers |= {"mcp-protocol-version": "2025-11-25"}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_templates", "arguments": {}}}
    listed = rpc(httpx.post(f"{idp_site}/mcp", json=body, headers=headers))
    assert listed["result"]["isError"] is False and listed["result"]["structuredContent"]["total_count"] == 0
    body["params"] = {"name": "create_template", "arguments": {"template_id": "x", "image_id": "ami-1"}}
    denied = rpc(httpx.post(f"{idp_site}/mcp", json=body, headers=headers))["result"]
    assert (
        denied["isError"] is True
        and json.loads(denied["content"][0]["text"])["error"]["type"] == "PermissionDeniedError"
    )


# -- configuration ----------------------------------------------------------------------------------------------------


async def test_public_url_names_the_resource_and_http_off_serves_none(tmp_path: Path) -> None:
    """`mcp.public_url` is the issuer and the audience (whatever address the request came to); `mcp.http:
    false` leaves every one of these paths to the REST door's 404."""
    from pluginsdk.server import create_app

    public = load_settings(config=base_config(tmp_path, mcp={"public_url": "https://tools.example.org/"}), environ={})
    transport = httpx.ASGITransport(app=create_app(public))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        metadata = (await client.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata == {
            "resource": "https://tools.example.org/mcp",
            "authorization_servers": ["https://tools.example.org/"],
            "bearer_methods_supported": ["header"],
            "resource_name": "pluginsdk",
        }
        server = (await client.get("/.well-known/oauth-authorization-server")).json()
        assert server["token_endpoint"] == "https://tools.example.org/token"
        refused = await client.post("/mcp", json=INIT, headers=ACCEPT)
        expected = 'resource_metadata="https://tools.example.org/.well-known/oauth-protected-resource/mcp"'
        assert refused.status_code == 401 and expected in refused.headers["www-authenticate"]

    off = load_settings(config=base_config(tmp_path, mcp={"http": False}), environ={})
    transport = httpx.ASGITransport(app=create_app(off))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        for path in ("/mcp", "/.well-known/oauth-authorization-server", "/register", "/token", "/oauth/signin"):
            answer = await client.post(path, json=INIT, headers=ACCEPT)
            assert answer.status_code == 404 and answer.json()["error_code"] == "NOT_FOUND", path


@pytest.mark.parametrize(
    ("body", "json_answer"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', True),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": 1}}}', False),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"progress\\u0054oken": 1}}}',
            False,
        ),
        (b'{"jsonrpc": "2.0", "method": "notifications/initialized"}', False),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]', False),
        (b"{", False),
        (b"[" * 5000 + b"]" * 5000, False),
    ],
    ids=["plain", "progress", "escaped-progress", "notification", "batch", "malformed", "too-deep"],
)
def test_only_a_plain_request_without_progress_is_answered_json(body: bytes, json_answer: bool) -> None:
    """Anything but one request that asked for no progress keeps the SDK's own answer (the event stream)."""
    from pluginsdk.server.remote_mcp.answers import wants_json

    assert wants_json(body) is json_answer
