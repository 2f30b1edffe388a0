"""`notifications/progress` while a tool waits for machines: in-process (both wire modes) and over real stdio.

The `local` provider boots each machine after 0.5-1.5 x `boot_delay`, so a waiting request passes through
several running counts; the server reads the status every 0.5 s and notifies when the count rises.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from pluginsdk.mcp import create_server
from tests.mcp.helpers import SERVE, connect, data, read_until, rpc, stdio_env
from tests.support.backends import open_sdk

SLOW = {"local": {"boot_delay": 1.2, "terminate_delay": 0.05, "seed": 7}}

Seen = list[tuple[float, float | None, str | None]]


def collector() -> tuple[Seen, Any]:
    seen: Seen = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    return seen, on_progress


async def arrived(seen: Seen, last: float) -> None:
    """Wait for the notification reporting `last` (the JSON-RPC client runs callbacks as tasks of their own)."""
    with anyio.fail_after(5):
        while not seen or seen[-1][0] < last:
            await anyio.sleep(0.01)


def assert_rising_to(seen: Seen, count: int, request_id: str) -> None:
    progress = [p for p, _, _ in seen]
    assert progress[0] == 0 and progress[-1] == count, seen
    assert all(a < b for a, b in itertools.pairwise(progress)), seen  # strictly increasing
    assert {t for _, t, _ in seen} == {count}
    for p, _, message in seen:
        assert message is not None and message.startswith(f"{request_id}: ")
        assert f" {p:.0f}/{count} machines running (" in message


@pytest.mark.parametrize(
    ("tool", "count_field"), [("create_request", "requested_count"), ("request_machines", "count")]
)
async def test_waiting_tool_notifies_rising_progress(tmp_path: Path, mode: str, tool: str, count_field: str) -> None:
    async with open_sdk("local", tmp_path, provider=SLOW) as sdk, connect(sdk, mode) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        seen, on_progress = collector()
        args = {"template_id": "web", count_field: 3, "wait": True}
        res = await client.call_tool(tool, args, progress_callback=on_progress)
        req = data(res)
        await arrived(seen, 3)
        status = data(await client.call_tool("get_request_status", {"request_id": [req["request_id"]]}))
    assert not res.is_error and req["status"] == "completed" and len(req["machines"]) == 3
    assert {m["status"] for m in req["machines"]} == {"running"}
    assert status["requests"][0]["status"] == "completed"
    assert_rising_to(seen, 3, req["request_id"])


async def test_no_progress_requested_no_notification(tmp_path: Path) -> None:
    """On the in-memory JSON-RPC wire every notification reaches `message_handler`: none without a token."""
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/progress":
            notes.append(message)

    async with (
        open_sdk("local", tmp_path, provider=SLOW) as sdk,
        Client(create_server(sdk), mode="legacy", message_handler=on_message) as client,
    ):
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        args = {"template_id": "web", "count": 2, "wait": True}
        quiet = data(await client.call_tool("request_machines", args))
        await anyio.sleep(0.2)
        assert quiet["status"] == "completed" and len(quiet["machines"]) == 2
        assert notes == []
        # the same call with a progress token: the handler sees its notifications (the check above can fail)
        seen, on_progress = collector()
        loud = data(await client.call_tool("request_machines", args, progress_callback=on_progress))
        await arrived(seen, 2)
    assert loud["status"] == "completed"
    assert len(notes) == len(seen) >= 2
    assert_rising_to(seen, 2, loud["request_id"])


async def test_tools_that_do_not_wait_send_no_progress(tmp_path: Path, mode: str) -> None:
    async with open_sdk("local", tmp_path, provider=SLOW) as sdk, connect(sdk, mode) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        seen, on_progress = collector()
        args = {"template_id": "web", "count": 1}  # no wait
        res = data(await client.call_tool("request_machines", args, progress_callback=on_progress))
        dry = await client.call_tool(
            "create_request",
            {"template_id": "web", "requested_count": 1, "wait": True, "dry_run": True},
            progress_callback=on_progress,
        )
        await anyio.sleep(0.2)
    assert res["status"] == "submitted" and data(dry)["dry_run"] is True
    assert seen == []


# -- a real stdio subprocess ---------------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return stdio_env(tmp_path, boot_delay=1.2)


async def test_stdio_client_receives_progress(env: dict[str, str]) -> None:
    async with Client(StdioServerParameters(command=sys.executable, args=SERVE, env=env)) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        seen, on_progress = collector()
        args = {"template_id": "web", "count": 3, "wait": True}
        req = data(await client.call_tool("request_machines", args, progress_callback=on_progress))
        await arrived(seen, 3)
    assert req["status"] == "completed" and len(req["machines"]) == 3
    assert_rising_to(seen, 3, req["request_id"])


def test_stdio_wire_progress_token(env: dict[str, str], tmp_path: Path) -> None:
    """Hand-written JSON-RPC: notifications carry the caller's token and precede the reply; no token, none."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    wait = {"template_id": "web", "count": 2, "wait": True}
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, *SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env
        )
        try:
            assert proc.stdin is not None

            def send(*lines: str) -> None:
                assert proc.stdin is not None
                proc.stdin.write("".join(lines))
                proc.stdin.flush()

            send(rpc(1, "initialize", hello), rpc(None, "notifications/initialized"))
            read_until(proc, {1})
            template = {"template_id": "web", "image_id": "ami-1"}
            send(rpc(2, "tools/call", {"name": "create_template", "arguments": template}))
            read_until(proc, {2})
            send(rpc(3, "tools/call", {"name": "request_machines", "arguments": wait}))
            replies, quiet_notes = read_until(proc, {3})
            quiet = replies[3]
            meta = {"progressToken": "tok-7"}
            send(rpc(4, "tools/call", {"name": "request_machines", "arguments": wait, "_meta": meta}))
            replies, loud_notes = read_until(proc, {4})
            loud = replies[4]
            proc.stdin.close()
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert quiet["result"]["structuredContent"]["status"] == "completed"
    assert quiet_notes == []
    result = loud["result"]["structuredContent"]
    assert result["status"] == "completed" and len(result["machines"]) == 2
    assert {n["method"] for n in loud_notes} == {"notifications/progress"}
    params = [n["params"] for n in loud_notes]
    assert {p["progressToken"] for p in params} == {"tok-7"}
    seen = [(p["progress"], p.get("total"), p.get("message")) for p in params]
    assert_rising_to(seen, 2, result["request_id"])
