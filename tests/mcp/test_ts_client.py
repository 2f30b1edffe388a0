"""Independent clients: the official MCP TypeScript SDK client and the MCP Inspector CLI drive `mcp serve --stdio`.

The TypeScript client (`@modelcontextprotocol/sdk`, pinned with the Inspector CLI in `tests/clients/package.json`
and its lockfile) compiles every tool's `outputSchema` with ajv when it lists the tools and checks each
structured result against it, also on `isError` results. `ts_client/client.mjs` runs a plan of calls and
resource reads and reports each call's result, or what the client threw. The packages are the npm clients
every test shares (`tests/support/npm.py`: one `npm ci` per lockfile into a cache directory outside the
repository). Skipped, saying why, only where Node.js (with npm) is absent or too old, or npm cannot install
the packages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.helpers import SERVE
from tests.mcp.test_profiles import BUDGET  # one budget for every listing test
from tests.support.cli import cli_environment

HERE = Path(__file__).resolve().parent / "ts_client"


@pytest.fixture(scope="session")
def node_client(npm_clients: Path) -> Path:
    """The shared npm clients' directory, with `client.mjs` beside `node_modules` where its imports resolve."""
    shutil.copy2(HERE / "client.mjs", npm_clients / "client.mjs")
    return npm_clients


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    """A fresh store and a `local` provider that holds 2 machines: a third one is a provider failure."""
    local = "    boot_delay: 0.05\n    terminate_delay: 0.05\n    seed: 3\n    capacity: 2\n"
    return cli_environment(tmp_path, "provider:\n  local:\n" + local)


def run_client(root: Path, tmp_path: Path, plan: dict[str, Any], script: str = "client.mjs") -> dict[str, Any]:
    """Run the node client `script` (stdio: `client.mjs`, HTTP: `http_client.mjs`) on `plan`; its report."""
    plan_path = tmp_path / f"plan-{len(list(tmp_path.glob('plan-*')))}.json"
    plan_path.write_text(json.dumps(plan))
    res = subprocess.run(
        ["node", str(root / script), str(plan_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    report: dict[str, Any] = json.loads(res.stdout.splitlines()[-1])
    return report


def server(env: dict[str, str], *extra: str, code: str | None = None) -> dict[str, Any]:
    """The plan's server: `python -m pluginsdk mcp serve --stdio [extra]` (or `python -c code`) with `env`."""
    args = ["-c", code] if code else [*SERVE, *extra]
    return {"command": sys.executable, "args": args, "env": env}


def error_of(call: dict[str, Any]) -> dict[str, Any]:
    """The error object of a failing call as the TypeScript client received it."""
    assert call["thrown"] is None, call["thrown"]
    assert call["isError"] is True and "structuredContent" not in call, call
    assert [c["type"] for c in call["content"]] == ["text"]
    body = json.loads(call["content"][0]["text"])
    assert body["success"] is False
    error: dict[str, Any] = body["error"]
    assert error["tool"] == call["name"]
    assert error["arguments"] == {k: "***" if "password" in k else v for k, v in call["arguments"].items()}
    assert isinstance(error["message"], str) and error["message"]
    return error


PROVISIONING_PLAN = [
    ("create_template", {"template_id": "web", "image_id": "ami-1"}),
    ("request_machines", {"template_id": "web", "count": 2, "wait": True}),
    ("get_request", {"request_id": "$result:1/request_id"}),
    ("get_request_status", {"request_id": "$result:1/request_id"}),
    ("list_machines", {}),
    ("list_templates", {}),
    ("check_provider_health", {}),
    ("list_providers", {}),
    # unknown ids
    ("get_template", {"template_id": "nope"}),
    ("get_request", {"request_id": "req-nope"}),
    ("get_machine", {"machine_id": "i-nope"}),
    # invalid arguments
    ("request_machines", {"template_id": "web", "count": 0}),
    ("request_machines", {"template_id": "web", "machine_count": 1}),
    ("create_template", {"templateId": "x", "imageId": "ami-1"}),
    ("get_request_status", {"request_ids": ["req-1"]}),
    # provider failure: the provider holds 2 machines, both running
    ("request_machines", {"template_id": "web", "count": 1}),
    # tools this server does not have
    ("create_role", {"role_name": "x"}),
    ("no_such_tool", {}),
    ("return_machines", {"machine_ids": ["$result:1/machines/0/machine_id", "$result:1/machines/1/machine_id"]}),
]


def test_typescript_client_default_profile(node_client: Path, server_env: dict[str, str], tmp_path: Path) -> None:
    plan = {
        **server(server_env),
        "calls": [{"name": n, "arguments": a} for n, a in PROVISIONING_PLAN],
        "readResources": True,
        "failingResources": ["templates://nope", "files://etc/passwd"],
    }
    report = run_client(node_client, tmp_path, plan)
    assert report["server"]["name"] == "pluginsdk"
    assert {"create_template", "request_machines", "return_machines", "check_provider_health"} <= set(report["tools"])
    assert "create_role" not in report["tools"]
    assert report["listBytes"] <= BUDGET, report["listBytes"]
    calls = report["calls"]
    for call in calls[:8] + calls[-1:]:  # succeeding: the client checked each against the output schema
        assert call["thrown"] is None and call["isError"] is not True, call
        assert json.loads(call["content"][0]["text"]) == call["structuredContent"]
    created = calls[1]["structuredContent"]
    assert created["status"] == "completed" and len(created["machines"]) == 2
    assert calls[2]["structuredContent"]["request_id"] == created["request_id"]
    returned = calls[-1]["structuredContent"]
    assert returned["processed_machines"] == [m["machine_id"] for m in created["machines"]]

    codes = [(error_of(c)["type"], error_of(c)["error_code"]) for c in calls[8:11]]
    assert codes == [
        ("NotFoundError", "TEMPLATE_NOT_FOUND"),
        ("NotFoundError", "REQUEST_NOT_FOUND"),
        ("NotFoundError", "MACHINE_NOT_FOUND"),
    ]
    invalid = [error_of(c) for c in calls[11:15]]
    assert all(e["type"] == "ValidationError" and e["error_code"] == "VALIDATION_ERROR" for e in invalid)
    assert [e["details"]["field"] for e in invalid] == ["count", "machine_count", "templateId", "request_ids"]
    assert "'count'" in invalid[0]["message"] and "request_machines" in invalid[0]["message"]
    provider = error_of(calls[15])
    assert provider["type"] == "ProviderError" and provider["error_code"] == "PROVIDER_ERROR"
    assert "capacity" in provider["message"].lower()
    elsewhere, unknown = error_of(calls[16]), error_of(calls[17])
    assert elsewhere["type"] == unknown["type"] == "HandlerDiscoveryError"
    assert "--profile auth" in elsewhere["message"]

    reads = {r["uri"]: r for r in report["resources"]}
    readable = [r for uri, r in reads.items() if uri not in ("templates://nope", "files://etc/passwd")]
    assert {r["uri"].split("://")[0] for r in readable} == {"templates", "requests", "machines", "providers"}
    assert len(readable) == 7  # four collections, and one entity through each of the three templates
    for r in readable:
        assert r["thrown"] is None, r
        assert r["contents"][0]["mimeType"] == "application/json" and json.loads(r["contents"][0]["text"])
    assert reads["templates://web"]["thrown"] is None
    assert reads["templates://nope"]["thrown"]["code"] == -32602
    assert reads["files://etc/passwd"]["thrown"]["code"] == -32602


def test_typescript_client_all_profile(node_client: Path, server_env: dict[str, str], tmp_path: Path) -> None:
    """Every tool's output schema compiles in ajv (listTools would throw), and auth tools answer the same way."""
    plan = {
        **server(server_env, "--profile", "all"),
        "calls": [
            {"name": "list_roles", "arguments": {}},
            {"name": "get_version", "arguments": {}},
            {"name": "get_api_key", "arguments": {"api_key_id": "nope"}},
            {"name": "login", "arguments": {"username": "alice", "password": "hunter2-secret"}},
            {"name": "create_role", "arguments": {"roleName": "x"}},
        ],
    }
    report = run_client(node_client, tmp_path, plan)
    assert len(report["tools"]) >= 80 and {"create_role", "request_machines"} <= set(report["tools"])
    ok, version, missing, login, camel = report["calls"]
    for call in (ok, version):
        assert call["thrown"] is None and call["isError"] is not True, call
    assert error_of(missing)["type"] == "NotFoundError"
    denied = error_of(login)  # managed logins are off in this configuration: a refusal, the password masked
    assert denied["type"] in ("ValidationError", "AuthenticationError") and denied["arguments"]["password"] == "***"
    assert "hunter2" not in login["content"][0]["text"]
    assert error_of(camel)["details"]["field"] == "roleName"


OFF_SCHEMA = """
import sys
import mcp_types as types
from pluginsdk.mcp import tools

def off_schema_failure(err, tool, args, spec):  # structured content that breaks the output schema
    body = {"success": False, "error": tools.error_object(err, tool=tool, arguments=args, spec=spec)}
    return types.CallToolResult(content=tools._text(body), structured_content=body, is_error=True)

tools.ToolSet._failure = staticmethod(off_schema_failure)
sys.argv = ["pluginsdk", "mcp", "serve", "--stdio"]
from pluginsdk.cli import main
main()
"""


def test_typescript_client_rejects_an_off_schema_error_shape(
    node_client: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    """The check above can fail: the same client throws on an error shape that breaks the output schema."""
    calls = [{"name": "get_template", "arguments": {"template_id": "x"}}]
    plan = {**server(server_env, code=OFF_SCHEMA), "calls": calls}
    (call,) = run_client(node_client, tmp_path, plan)["calls"]
    assert call["thrown"] is not None and "does not match the tool's output schema" in call["thrown"]["message"]


def inspector(
    root: Path, env: dict[str, str], *method: str, code: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`mcp-inspector --cli <server> --method ...` (Inspector 0.15.0, the last on Node 20), server env by `-e`."""
    cli = root / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "cli.js"
    plugin_env = [a for k, v in env.items() if k.startswith("PLUGIN_") for a in ("-e", f"{k}={v}")]
    target = [sys.executable, "-c", code] if code else [sys.executable, *SERVE]
    return subprocess.run(
        ["node", str(cli), "--cli", *plugin_env, *target, *method],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_inspector_cli(node_client: Path, server_env: dict[str, str]) -> None:
    """`tools/list`, then `tools/call` (the Inspector lists the tools first, so it checks results against
    output schemas)."""
    listed = inspector(node_client, server_env, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr[-2000:]
    tools = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}
    assert "request_id" in tools["get_request_status"]["inputSchema"]["required"]
    status = ("--method", "tools/call", "--tool-name", "get_request_status", "--tool-arg", "request_id=req-nope")
    missing = inspector(node_client, server_env, *status)
    assert missing.returncode == 0, missing.stderr[-2000:]
    assert json.loads(json.loads(missing.stdout)["content"][0]["text"])["error"]["error_code"] == "REQUEST_NOT_FOUND"

    args = ("--method", "tools/call", "--tool-name", "get_template", "--tool-arg", "template_id=nope")
    failed = inspector(node_client, server_env, *args)
    assert failed.returncode == 0, failed.stderr[-2000:]
    result = json.loads(failed.stdout)
    assert result["isError"] is True
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["type"] == "NotFoundError" and error["error_code"] == "TEMPLATE_NOT_FOUND"

    off = inspector(node_client, server_env, *args, code=OFF_SCHEMA)
    assert off.returncode != 0 and "output schema" in off.stderr  # the Inspector rejects the schema-breaking shape

    read = inspector(node_client, server_env, "--method", "resources/read", "--uri", "providers://")
    assert read.returncode == 0, read.stderr[-2000:]
    assert "local" in read.stdout
