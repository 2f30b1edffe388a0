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


def test_the_served_process_lets_request_temporaries_die_young(tmp_path: Path) -> None:
    """`operator_app` (what `serve()` and each worker run) raises the collector's young threshold, never lowers it."""
    import gc
    import logging

    from pluginsdk._gc import SERVER_YOUNG_THRESHOLD
    from pluginsdk.server import operator_app

    before = gc.get_threshold()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level  # operator_app configures logging too: put it back
    try:
        gc.set_threshold(700, 10, 10)
        operator_app(load_settings(config={**base_config(tmp_path), "api": {"metrics": "off"}}, environ={}))
        assert gc.get_threshold() == (SERVER_YOUNG_THRESHOLD, 10, 10)
        gc.set_threshold(SERVER_YOUNG_THRESHOLD * 2, 5, 5)  # an operator's own, higher setting wins
        operator_app(load_settings(config={**base_config(tmp_path), "api": {"metrics": "off"}}, environ={}))
        assert gc.get_threshold() == (SERVER_YOUNG_THRESHOLD * 2, 5, 5)
    finally:
        gc.set_threshold(*before)
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)
