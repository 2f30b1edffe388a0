"""The protocol `serve()` runs: uvicorn's httptools parser writing each response in one send."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pluginsdk.config import load_settings
from tests.server.door import threaded_server
from tests.support.backends import base_config
from tests.support.remote import admin_key


@contextmanager
def corked_server(config: dict[str, Any]) -> Iterator[int]:
    from pluginsdk.server import create_app
    from pluginsdk.server._protocol import DoorHttpToolsProtocol

    with threaded_server(create_app(load_settings(config=config, environ={})), DoorHttpToolsProtocol) as port:
        yield port


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, str]]:
    import asyncio

    config = base_config(tmp_path)
    key = asyncio.run(admin_key(config))
    with corked_server(config) as port:
        yield port, key


def test_keep_alive_responses_in_order(served: tuple[int, str]) -> None:
    port, key = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/api/v1/templates", body=json.dumps({"templateId": "web", "imageId": "ami-1"}),
                     headers={"Authorization": key, "Content-Type": "application/json"})  # fmt: skip
        r = conn.getresponse()
        assert r.status == 201 and json.loads(r.read())["template_id"] == "web"
        for _ in range(3):  # the same connection, one response after the other
            conn.request("GET", "/api/v1/templates/web", headers={"Authorization": key, "X-Request-ID": "r-1"})
            r = conn.getresponse()
            assert r.status == 200 and r.getheader("x-request-id") == "r-1"
            assert b'"web"' in r.read()
        conn.request("GET", "/api/v1/templates/web")
        r = conn.getresponse()
        assert r.status == 401 and json.loads(r.read())["error_code"] == "UNAUTHENTICATED"
        conn.request("GET", "/health")
        r = conn.getresponse()
        assert r.status == 200 and json.loads(r.read())["status"] == "ok"
    finally:
        conn.close()


def test_pipelined_and_closing_requests(served: tuple[int, str]) -> None:
    port, key = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        one = f"GET /api/v1/templates HTTP/1.1\r\nHost: x\r\nAuthorization: {key}\r\n\r\n".encode()
        last = f"GET /api/v1/templates HTTP/1.1\r\nHost: x\r\nAuthorization: {key}\r\nConnection: close\r\n\r\n"
        sock.sendall(one + one + last.encode())
        data = b""
        while chunk := sock.recv(65536):  # the server closes after the third response
            data += chunk
    assert data.count(b"HTTP/1.1 200 OK\r\n") == 3
    assert data.endswith(b"}") and b"connection: close" in data.lower()
