"""Helpers for the request-path tests: raw HTTP over a socket, keys with fewer rights, servers to hit."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from pluginsdk import PluginSDK
from tests.support.remote import in_thread

ROOT = Path(__file__).resolve().parents[2]


class Raw(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def raw_request(port: int, data: bytes, timeout: float = 10) -> Raw:
    """Send `data` as is on a new connection; the first response (read to its length, or to the close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)  # the server may answer and close before taking it all: read what it said
        return read_response(sock)


def read_response(sock: socket.socket) -> Raw:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed without a full response: {buf[:200]!r}")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return Raw(status, headers, body[:length])


def assert_envelope(r: Raw, status: int, code: str | None = None) -> dict[str, Any]:
    assert r.status == status, (r.status, r.body[:300])
    assert r.headers.get("content-type") == "application/json", r.headers
    assert r.headers.get("x-request-id")
    env: dict[str, Any] = r.json()
    assert env["success"] is False and isinstance(env["error"], str) and isinstance(env["details"], dict), env
    if code is not None:
        assert env["error_code"] == code, env
    return env


async def reader_key(config: dict[str, Any], user: str = "reader") -> str:
    """An API key of a user holding only `basicReadOnly` (issued in-process on the same store)."""
    async with PluginSDK(config=config) as local:
        await local.create_user_roles(user, ["basicReadOnly"])
        created = await local.create_api_key(api_key_name=f"{user}-key", description="read only", user_id=user)
        return str(created.api_key)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served_process(config: dict[str, Any], log: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`pluginsdk.server.serve()` in its own process, exactly as `pluginsdk server start` runs it."""
    port = free_port()
    code = (
        "from pluginsdk.config import load_settings; from pluginsdk.server import serve; "
        f"serve(load_settings(config={config!r}, environ={{}}), '127.0.0.1', {port})"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = log.open("wb")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield port, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@contextmanager
def threaded_server(app: Any, http: Any) -> Iterator[int]:
    """`app` on uvicorn in a thread with the given HTTP protocol (ours, or "auto" for uvicorn's stock one)."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=http, loop="asyncio", log_level="error", lifespan="on")
    with in_thread(config) as port:
        yield port
