"""The remote backend over its default lean HTTP client, against scripted loopback servers: keep-alive,
framing, connections the server drops, and the backend's retries and timeouts on top."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from backends.remote._http import LeanHTTP, lean_supported
from pluginsdk import NotFoundError, PluginSDK
from pluginsdk.errors import MethodExecutionError

REQ = {"request_id": "req-1", "status": "running", "count": 1, "template_id": "t"}


def response(status: int, body: Any = None, headers: dict[str, str] | None = None, chunked: bool = False) -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    head = [
        f"HTTP/1.1 {status} X",
        "Content-Type: application/json",
        *(f"{k}: {v}" for k, v in (headers or {}).items()),
    ]
    if chunked:
        head.append("Transfer-Encoding: chunked")
        mid = len(data) // 2
        data = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (data[:mid], data[mid:]) if p) + b"0\r\n\r\n"
    else:
        head.append(f"Content-Length: {len(data)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


@dataclass
class Scripted:
    """Answers each request with the next action: raw bytes, b"close" (drop without answering),
    b"hang" (never answer), or (bytes, "then-close")."""

    actions: list[Any]
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    connections: int = 0
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((lines[0], headers, body))
                action = self.actions.pop(0)
                if action == b"close":
                    return
                if action == b"hang":
                    await asyncio.sleep(30)
                    return
                if isinstance(action, tuple):
                    writer.write(action[0])
                    await writer.drain()
                    return
                writer.write(action)
                await writer.drain()
        finally:
            writer.close()


@pytest.fixture
async def scripted() -> AsyncIterator[Scripted]:
    s = Scripted([])
    server = await asyncio.start_server(s.handle, "127.0.0.1", 0)
    s.port = server.sockets[0].getsockname()[1]
    async with server:
        yield s
        server.close()


def remote(port: int, **kw: Any) -> PluginSDK:
    return PluginSDK(backend="remote", api_url=f"http://127.0.0.1:{port}", api_key="psdk_test", config={}, **kw)


def test_lean_client_is_the_default_only_where_it_fits() -> None:
    ok = {"Authorization": "psdk_x"}
    assert lean_supported("http://127.0.0.1:8000", ok, {})
    assert lean_supported("https://api.example.com/base", ok, {})
    assert not lean_supported("http://127.0.0.1:8000", ok, {"HTTPS_PROXY": "http://proxy:3128"})
    assert not lean_supported("http://127.0.0.1:8000", {"Authorization": "a\r\nX-Evil: 1"}, {})
    assert not lean_supported("ftp://host", ok, {})


async def test_keep_alive_query_body_and_headers(scripted: Scripted) -> None:
    created = {"request_id": "req-abc", "status": "submitted", "message": "ok"}
    scripted.actions = [response(200, REQ), response(200, REQ), response(202, created)]
    async with remote(scripted.port) as sdk:
        assert (await sdk.get_request("req-1")).request_id == "req-1"
        assert (await sdk.get_request("req 1/2", long=False)).request_id == "req-1"
        assert (await sdk.create_request("t", 2, request_id="req-abc")).id == "req-abc"
    assert scripted.connections == 1  # one keep-alive connection for all three
    line, headers, _ = scripted.requests[0]
    assert line == "GET /api/v1/requests/req-1?long=false&lightweight=false HTTP/1.1"
    assert headers["authorization"] == "psdk_test" and headers["host"] == f"127.0.0.1:{scripted.port}"
    assert scripted.requests[1][0].startswith("GET /api/v1/requests/req%201%2F2?long=false&")
    line, headers, body = scripted.requests[2]
    assert line == "POST /api/v1/machines HTTP/1.1" and headers["content-type"] == "application/json"
    assert json.loads(body)["request_id"] == "req-abc"


async def test_chunked_replies_and_error_envelopes(scripted: Scripted) -> None:
    env = {"success": False, "error": "Request 'req-9' not found.", "error_code": "REQUEST_NOT_FOUND",
           "details": {"field": "request_id", "value": "req-9"}}  # fmt: skip
    scripted.actions = [response(200, REQ, chunked=True), response(404, env, {"X-Request-ID": "rid-1"}, chunked=True)]
    async with remote(scripted.port) as sdk:
        assert (await sdk.get_request("req-1")).template_id == "t"
        with pytest.raises(NotFoundError) as exc:
            await sdk.get_request("req-9")
    assert exc.value.entity_id == "req-9" and exc.value.request_id == "rid-1"


async def test_query_retried_on_503_with_retry_after(scripted: Scripted) -> None:
    scripted.actions = [response(503, {"error": "busy"}, {"Retry-After": "0"}), response(200, REQ)]
    async with remote(scripted.port, max_retries=2) as sdk:
        assert (await sdk.get_request("req-1")).request_id == "req-1"
    assert len(scripted.requests) == 2


async def test_command_without_id_is_not_retried(scripted: Scripted) -> None:
    scripted.actions = [response(503, {"error": "down"}), response(202, {})]
    async with remote(scripted.port, max_retries=2) as sdk:
        with pytest.raises(MethodExecutionError):
            await sdk.create_request("t", 1)
    assert len(scripted.requests) == 1


async def test_server_closing_idle_connections_is_invisible(scripted: Scripted) -> None:
    created = {"request_id": "req-x", "status": "submitted", "message": "ok"}
    scripted.actions = [(response(200, REQ), "then-close"), (response(200, REQ), "then-close"), response(202, created)]
    async with remote(scripted.port, max_retries=0) as sdk:
        await sdk.get_request("req-1")
        await asyncio.sleep(0.05)  # the close arrives while the connection is idle
        await sdk.get_request("req-1")
        await asyncio.sleep(0.05)
        assert (await sdk.create_request("t", 1)).id == "req-x"  # a POST too: the dead connection is not used
    assert scripted.connections == 3


async def test_dropped_request_on_a_reused_connection(scripted: Scripted) -> None:
    # the server reads the next request and closes without answering: an idempotent read is resent once
    # on a fresh connection; a command without an id is not, and fails typed
    scripted.actions = [response(200, REQ), b"close", response(200, REQ), b"close"]
    async with remote(scripted.port, max_retries=0) as sdk:
        await sdk.get_request("req-1")
        assert (await sdk.get_request("req-1")).request_id == "req-1"
        with pytest.raises(MethodExecutionError, match="cannot reach"):
            await sdk.create_request("t", 1)
    assert len(scripted.requests) == 4


async def test_connection_refused_is_retried_then_typed() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with remote(port, max_retries=1) as sdk:
        with pytest.raises(MethodExecutionError, match="cannot reach"):
            await sdk.get_request("req-1")


async def test_timeout_becomes_a_typed_error(scripted: Scripted) -> None:
    scripted.actions = [b"hang"]
    async with remote(scripted.port, max_retries=0, timeout=0.3) as sdk:
        with pytest.raises(MethodExecutionError, match="did not answer"):
            await sdk.list_templates()


async def test_close_framed_and_connection_close_replies(scripted: Scripted) -> None:
    raw = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + json.dumps(REQ).encode()
    scripted.actions = [(raw, "then-close"), response(200, REQ, {"Connection": "close"}), response(200, REQ)]
    client = LeanHTTP(f"http://127.0.0.1:{scripted.port}", {"Authorization": "k"}, timeout=5)
    try:
        for _ in range(3):
            reply = await client.request("GET", "/api/v1/requests/req-1", idempotent=True)
            assert reply.status_code == 200 and json.loads(reply.content)["request_id"] == "req-1"
    finally:
        await client.aclose()
    assert scripted.connections == 3  # neither reply let the connection be reused
