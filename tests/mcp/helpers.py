"""MCP test helpers: an in-process client over a started SDK, and the pieces of a stdio subprocess session."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from pluginsdk import PluginSDK
from pluginsdk.mcp import create_server
from tests.support.cli import cli_environment


@asynccontextmanager
async def connect(sdk: PluginSDK, mode: str = "auto", profile: str | None = "all") -> AsyncIterator[Client]:
    """The SDK's client on a server over `sdk`; every tool by default (`profile=None`: the server's own choice)."""
    async with Client(create_server(sdk, profile), mode=mode) as client:
        yield client


def data(result: Any) -> Any:
    """A succeeding tool result's structured content, checked against its text twin."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def failure(result: Any) -> Any:
    """A failing tool result's `error` object: `isError`, no structured content, the object as JSON text."""
    assert result.is_error and result.structured_content is None
    assert len(result.content) == 1 and result.content[0].type == "text"
    body = json.loads(result.content[0].text)
    assert body["success"] is False and set(body) == {"success", "error"}
    assert {"type", "message", "tool", "arguments"} <= set(body["error"])
    return body["error"]


SERVE = ["-m", "pluginsdk", "mcp", "serve", "--stdio"]
"""Arguments to the interpreter that start the stdio server."""


def stdio_env(tmp_path: Path, boot_delay: float) -> dict[str, str]:
    """Environment of a server subprocess: its own SQLite store and a `local` provider booting in `boot_delay` s."""
    config = f"provider:\n  local:\n    boot_delay: {boot_delay}\n    terminate_delay: 0.05\n    seed: 3\n"
    return cli_environment(tmp_path, config)


def rpc(id_: int | None, method: str, params: dict[str, Any] | None = None) -> str:
    """One JSON-RPC line (a notification when `id_` is None)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        msg["id"] = id_
    if params is not None:
        msg["params"] = params
    return json.dumps(msg) + "\n"


_PENDING: dict[int, bytes] = {}
"""Bytes read from a server's stdout past the last whole line, by pid (kept between `read_until` calls)."""


def read_until(
    proc: subprocess.Popen[str], ids: Iterable[int], timeout: float = 60
) -> tuple[dict[int, Any], list[Any]]:
    """Read stdout lines until a reply to each of `ids` arrived; every line must be JSON-RPC.

    Returns the replies by id and the notifications read on the way, in order. Reads the pipe's descriptor
    itself: `select` on a buffered file says nothing of lines already in its buffer, so two replies arriving
    in one chunk would leave the second unseen.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    wanted = set(ids)
    deadline = time.monotonic() + timeout
    replies: dict[int, Any] = {}
    notes: list[Any] = []
    while not wanted <= set(replies):
        pending = _PENDING.get(proc.pid, b"")
        if b"\n" not in pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no reply to {sorted(wanted - set(replies))} within {timeout} s"
            chunk = os.read(fd, 1 << 20)
            assert chunk, "the server closed stdout"
            _PENDING[proc.pid] = pending + chunk
            continue
        line, _, _PENDING[proc.pid] = pending.partition(b"\n")
        msg = json.loads(line)  # a line that is not JSON fails here
        assert msg["jsonrpc"] == "2.0"
        if "id" in msg:
            replies[msg["id"]] = msg
        else:
            notes.append(msg)
    return replies, notes


def rest_of_stdout(proc: subprocess.Popen[str]) -> list[str]:
    """The lines a server wrote after those `read_until` consumed, up to its exit (call once it ended)."""
    assert proc.stdout is not None
    tail = _PENDING.pop(proc.pid, b"")
    while chunk := os.read(proc.stdout.fileno(), 1 << 20):
        tail += chunk
    return tail.decode().splitlines()
