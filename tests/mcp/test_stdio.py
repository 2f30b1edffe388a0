"""The real CLI as a subprocess: `python -m pluginsdk mcp serve --stdio` on a store in tmp_path.

One test drives it with the SDK's stdio client; the other writes JSON-RPC lines by hand and checks that
every line on stdout is protocol while the diagnostics (DEBUG logging) went to stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.helpers import SERVE, data, failure, read_until, rest_of_stdout, rpc, stdio_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return stdio_env(tmp_path, boot_delay=0.05)


async def test_stdio_client_lists_calls_and_reads(env: dict[str, str]) -> None:
    params = StdioServerParameters(command=sys.executable, args=SERVE, env=env)
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"create_template", "request_machines", "return_machines", "list_providers"} <= names
        created = await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        assert not created.is_error and data(created)["template_id"] == "web"
        req = data(await client.call_tool("request_machines", {"template_id": "web", "count": 1, "wait": True}))
        assert req["status"] == "completed"
        failed = await client.call_tool("get_request", {"request_id": "req-nope"})
        assert failure(failed)["type"] == "NotFoundError"
        text = (await client.read_resource("templates://")).contents[0].text  # type: ignore[union-attr]
        assert [t["template_id"] for t in json.loads(text)["templates"]] == ["web"]


def test_stdout_carries_only_protocol(env: dict[str, str], tmp_path: Path) -> None:
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    lines = [
        rpc(1, "initialize", hello),
        rpc(None, "notifications/initialized"),
        rpc(2, "tools/list"),
        rpc(3, "tools/call", {"name": "get_template", "arguments": {"template_id": "nope"}}),
        rpc(4, "resources/read", {"uri": "providers://"}),
    ]  # fmt: skip
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, *SERVE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**env, "PLUGIN_LOG_LEVEL": "DEBUG"},
        )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("".join(lines))
            proc.stdin.flush()
            by_id, _ = read_until(proc, {1, 2, 3, 4})
            proc.stdin.close()  # end of session: the server exits cleanly
            assert proc.wait(timeout=30) == 0
            for line in rest_of_stdout(proc):  # anything after the replies is protocol too
                assert json.loads(line)["jsonrpc"] == "2.0"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert by_id[1]["result"]["serverInfo"]["name"] == "pluginsdk"
    assert len(by_id[2]["result"]["tools"]) >= 30  # the default profile, provisioning
    call = by_id[3]["result"]
    assert call["isError"] is True and "structuredContent" not in call
    error = json.loads(call["content"][0]["text"])["error"]
    assert error == {
        "type": "NotFoundError",
        "message": error["message"],
        "tool": "get_template",
        "arguments": {"template_id": "nope"},
        "error_code": "TEMPLATE_NOT_FOUND",
        "details": {"field": "template_id", "value": "nope"},
    }
    providers = json.loads(by_id[4]["result"]["contents"][0]["text"])["providers"]
    assert "local" in {p["name"] for p in providers}
    assert "DEBUG" in stderr_path.read_text()  # diagnostics went to stderr


def test_startup_error_goes_to_stderr(env: dict[str, str]) -> None:
    res = subprocess.run(
        [sys.executable, *SERVE],
        input="",
        capture_output=True,
        text=True,
        env={**env, "PLUGIN_BACKEND": "remote"},  # remote without api.url: a configuration error
        timeout=60,
        check=False,
    )
    assert res.returncode == 1 and res.stdout == ""
    assert "CONFIGURATION_ERROR" in res.stderr


def test_example_client_runs(env: dict[str, str], tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "examples" / "mcp_client.py"
    res = subprocess.run(
        [sys.executable, str(script), "--store", str(tmp_path / "example.db")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert "create_template: created" in res.stdout and ": completed, machines [" in res.stdout
    assert '"type": "NotFoundError"' in res.stdout and "return request ret-" in res.stdout
