"""Independent clients over Streamable HTTP: the official MCP TypeScript SDK client and the MCP Inspector CLI
(`--transport http`) against `/mcp` of a real server (`http_site.py`).

The TypeScript client lists the tools (compiling every output schema), calls them with an API key, follows a
waiting request's progress and cancels one, and runs the whole OAuth flow with its own OAuth client:
discovery from the 401's `WWW-Authenticate`, registration, PKCE, the sign-in (password; password and TOTP),
the token, the call. `ts_client/http_client.mjs` plays the user's browser by HTTP.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp.http_site import McpSite
from tests.mcp.test_ts_client import BUDGET, error_of, run_client

HERE = Path(__file__).resolve().parent / "ts_client"


@pytest.fixture(scope="session")
def node_http(npm_clients: Path) -> Path:
    shutil.copy2(HERE / "http_client.mjs", npm_clients / "http_client.mjs")
    shutil.copy2(HERE / "bearer.mjs", npm_clients / "bearer.mjs")
    return npm_clients


def run(root: Path, tmp_path: Path, plan: dict[str, Any]) -> dict[str, Any]:
    return run_client(root, tmp_path, plan, script="http_client.mjs")


def ok(call: dict[str, Any]) -> dict[str, Any]:
    assert call["thrown"] is None and call.get("isError") is not True, call
    data: dict[str, Any] = call["structuredContent"]
    assert json.loads(call["content"][0]["text"]) == data
    return data


def test_typescript_client_with_an_api_key(node_http: Path, site: McpSite, tmp_path: Path) -> None:
    calls = [
        {"name": "create_template", "arguments": {"template_id": "web", "image_id": "ami-1"}},
        {"name": "request_machines", "arguments": {"template_id": "web", "count": 3, "wait": True}, "progress": True},
        {"name": "get_template", "arguments": {"template_id": "nope"}},
        {
            "name": "request_machines",
            "arguments": {"template_id": "web", "count": 2, "wait": True},
            "progress": True,
            "abortAfterProgress": 1,
        },
        {"name": "list_templates", "arguments": {}},
    ]
    report = run(node_http, tmp_path, {"url": site.mcp, "bearer": site.admin_key, "calls": calls})
    assert report["thrown"] is None and report["connected"], report
    assert {"create_template", "request_machines", "list_machines"} <= set(report["tools"])
    assert "create_role" not in report["tools"]  # the default profile, as over stdio
    created, waited, missing, cancelled, listed = report["calls"]
    assert ok(created)["template_id"] == "web"
    request = ok(waited)
    assert request["status"] == "completed" and len(request["machines"]) == 3
    progress = [p["progress"] for p in waited["progress"]]
    assert len(progress) >= 2 and progress == sorted(set(progress)) and progress[-1] == 3, waited["progress"]
    assert all(p["total"] == 3 and p["message"].startswith(request["request_id"]) for p in waited["progress"])
    error = error_of({**missing, "arguments": {"template_id": "nope"}})
    assert (error["type"], error["error_code"]) == ("NotFoundError", "TEMPLATE_NOT_FOUND")
    assert cancelled["thrown"] is not None and cancelled["progress"], cancelled  # the client gave up
    sent = [(r["rpc"], r["status"]) for r in report["requests"] if r["path"] == "/mcp"]
    assert ("notifications/cancelled", 202) in sent  # ... and told the server, which took it
    listing = ok(listed)  # the session goes on after a cancelled call
    assert "web" in [t["template_id"] for t in listing["templates"]], listing


def test_typescript_client_oauth_flow(node_http: Path, site: McpSite, tmp_path: Path) -> None:
    """Discovery, dynamic registration, authorization code + PKCE with the managed-pool sign-in, the token,
    the call: all by the SDK's OAuth client."""
    plan = {
        "url": site.mcp,
        "oauth": {"username": site.operator, "password": "Console-Test-Passw0rd!"},
        "calls": [{"name": "create_template", "arguments": {"template_id": "t1", "image_id": "ami-1"}}],
    }
    report = run(node_http, tmp_path, plan)
    assert report["thrown"] is None and report["connected"], report
    flow = report["oauth"]
    assert flow["registered"]["client_id"] and flow["registered"]["has_secret"]
    asked = flow["authorizationUrl"]
    assert asked["code_challenge_method"] == "S256" and asked["code_challenge"]
    assert asked["resource"] == site.mcp and asked["redirect_uri"] == "http://127.0.0.1:9/callback"
    assert flow["state"] == flow["sentState"] and flow["code"]
    assert flow["tokenType"].lower() == "bearer" and 0 < flow["expiresIn"] <= 900 and not flow["refresh"]
    paths = [(r["method"], r["path"], r["status"]) for r in report["requests"]]
    assert paths[0] == ("POST", "/mcp", 401)
    assert ("GET", "/.well-known/oauth-protected-resource/mcp", 200) in paths
    assert ("GET", "/.well-known/oauth-authorization-server", 200) in paths
    assert ("POST", "/register", 201) in paths and ("POST", "/token", 200) in paths
    assert ok(report["calls"][0])["template_id"] == "t1"


def test_typescript_client_oauth_with_totp(node_http: Path, site: McpSite, tmp_path: Path) -> None:
    """A user whose sign-in needs an authenticator code gets a token only with it; a public client (no secret)."""
    user = {"username": "guarded", "password": "Console-Test-Passw0rd!", "authMethod": "none"}
    without = run(node_http, tmp_path, {"url": site.mcp, "oauth": user, "calls": []})
    assert without["thrown"] is not None and "sign-in answered 401" in without["thrown"]["message"]
    report = run(node_http, tmp_path, {"url": site.mcp, "oauth": {**user, "totp": site.totp()}, "calls": []})
    assert report["thrown"] is None and report["connected"], report
    assert report["oauth"]["registered"]["has_secret"] is False


def test_read_only_agent_gets_the_rest_apis_403(node_http: Path, site: McpSite, tmp_path: Path) -> None:
    """The viewer's agent: reads work, a write is the REST API's 403 (also for invalid arguments: tier 1 first)."""
    calls = [
        {"name": "list_templates", "arguments": {}},
        {"name": "create_template", "arguments": {"template_id": "v1", "image_id": "ami-1"}},
        {"name": "request_machines", "arguments": {"template_id": "web", "count": 0}},
    ]
    report = run(node_http, tmp_path, {"url": site.mcp, "bearer": site.viewer_key, "calls": calls})
    listed, write, invalid = report["calls"]
    ok(listed)
    headers = {"Authorization": f"Bearer {site.viewer_key}"}
    rest_write = httpx.post(
        f"{site.url}/api/v1/templates", json={"templateId": "v1", "imageId": "ami-1"}, headers=headers
    )
    rest_invalid = httpx.post(f"{site.url}/api/v1/machines", json={"templateId": "web", "count": 0}, headers=headers)
    for call, arguments, rest in (
        (write, calls[1]["arguments"], rest_write),
        (invalid, calls[2]["arguments"], rest_invalid),
    ):
        assert rest.status_code == 403, rest.text
        envelope = rest.json()
        error = error_of({**call, "arguments": arguments})
        assert (error["type"], error["error_code"]) == ("PermissionDeniedError", envelope["error_code"]), error
        assert error["message"] == envelope["error"]


def inspector(root: Path, url: str, key: str | None, *method: str) -> subprocess.CompletedProcess[str]:
    """`mcp-inspector --cli URL --transport http --method ...`. Inspector CLI 0.15.0 (the last on Node 20) has
    no header option: `bearer.mjs`, preloaded, adds `Authorization: Bearer $MCP_BEARER` to its requests."""
    cli = root / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "cli.js"
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "NODE_OPTIONS": f"--import={root / 'bearer.mjs'}"}
    if key is not None:
        env["MCP_BEARER"] = key
    return subprocess.run(
        ["node", str(cli), "--cli", url, "--transport", "http", *method],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**env, "HOME": str(root)},
    )


def test_inspector_cli_over_http(node_http: Path, site: McpSite) -> None:
    listed = inspector(node_http, site.mcp, site.admin_key, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr[-2000:]
    tools = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}
    assert "request_id" in tools["get_request_status"]["inputSchema"]["required"]
    assert len(json.dumps(json.loads(listed.stdout), separators=(",", ":"))) <= BUDGET

    args = ("--method", "tools/call", "--tool-name", "get_template", "--tool-arg", "template_id=nope")
    failed = inspector(node_http, site.mcp, site.admin_key, *args)
    assert failed.returncode == 0, failed.stderr[-2000:]
    result = json.loads(failed.stdout)
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["error"]["error_code"] == "TEMPLATE_NOT_FOUND"

    call = ("--method", "tools/call", "--tool-name", "list_providers")
    listed_providers = inspector(node_http, site.mcp, site.admin_key, *call)
    assert listed_providers.returncode == 0 and "local" in listed_providers.stdout, listed_providers.stderr[-2000:]

    refused = inspector(node_http, site.mcp, None, "--method", "tools/list")
    assert refused.returncode != 0 and "Authentication required" in refused.stderr
