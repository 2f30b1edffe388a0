"""Every answer in the envelope, every route under the same HTTP rules (docs/rest.md), against a real served
process: catalog routes, the documents and the operator routes (/livez, /readyz, /metrics) all carry
`X-Request-ID`, answer another method with 405 and `Allow` (HEAD included: it is not served), `OPTIONS` with
204; the OpenAPI document lists every route served; `Upgrade: websocket` gets an envelope answer.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.door import assert_envelope, raw_request, served_process, threaded_server
from tests.support.backends import base_config
from tests.support.remote import admin_key

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
OPERATOR = ("/livez", "/readyz", "/metrics")
UPGRADE = (
    "Host: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    tmp = tmp_path_factory.mktemp("every-route")
    config = base_config(tmp)
    key = asyncio.run(admin_key(config))
    with served_process(config, tmp / "server.log") as (port, _):
        yield port, key


def _fill(path: str) -> str:
    return re.sub(r"{(\w+)}", lambda m: f"x-{m.group(1)}", path)


def _document(port: int) -> dict[str, Any]:
    doc: dict[str, Any] = httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=30).json()
    return doc


def test_every_route_follows_the_common_http_rules(served: tuple[int, str]) -> None:
    port, _ = served
    doc = _document(port)
    routes = {path: {m.upper() for m in ops} for path, ops in doc["paths"].items()}
    routes |= {"/openapi.json": {"GET"}, "/docs": {"GET"}}
    assert set(OPERATOR) <= set(routes) and len(routes) > 40
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for template, served_methods in sorted(routes.items()):
            path = _fill(template)
            for method in METHODS:
                rid = f"{method}-{path}"[:100]
                r = client.request(method, path, headers={"X-Request-ID": rid})  # no credentials: nothing changes
                assert r.headers.get_list("x-request-id") == [rid], (method, path)
                if method in served_methods:
                    assert r.status_code != 405, (method, path)
                    continue
                assert r.status_code == 405, (method, path, r.status_code)
                assert {m.strip() for m in r.headers["allow"].split(",")} == served_methods | {"OPTIONS"}
                if method != "HEAD":  # a HEAD answer has no body
                    assert r.json()["error_code"] == "METHOD_NOT_ALLOWED", (method, path)
            options = client.request("OPTIONS", path, headers={"X-Request-ID": "opt"})
            assert options.status_code == 204 and options.headers["x-request-id"] == "opt", path
            assert {m.strip() for m in options.headers["allow"].split(",")} == served_methods | {"OPTIONS"}


def test_operator_routes_answer_as_documented(served: tuple[int, str]) -> None:
    import jsonschema

    port, _ = served
    doc = _document(port)
    for path in OPERATOR:
        op = doc["paths"][path]["get"]
        assert op["tags"] == ["system"] and op["operationId"] == path.strip("/") and op["description"]
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for path in ("/livez", "/readyz"):
            r = client.get(path)
            assert r.status_code == 200 and r.headers["content-type"] == "application/json"
            assert r.headers["cache-control"] == "no-store"
            schema = doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
            jsonschema.validate(r.json(), schema)
        metrics = client.get("/metrics")  # loopback (the default): served to this client
        assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
        assert "text/plain" in doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
        # the operator routes are requests like any other: timed by route template
        assert 'http_route="/livez"' in client.get("/metrics").text


def test_an_upgrade_request_is_answered_as_plain_http_in_the_envelope(served: tuple[int, str]) -> None:
    port, key = served
    r = raw_request(port, f"GET /ws HTTP/1.1\r\n{UPGRADE}\r\n".encode())
    assert_envelope(r, 404, "NOT_FOUND")
    assert r.headers["connection"] == "close"  # the parser stops at an upgrade: one answer, then close
    r = raw_request(port, f"GET /api/v1/templates HTTP/1.1\r\n{UPGRADE}Authorization: {key}\r\n\r\n".encode())
    assert r.status == 200 and r.headers["x-request-id"] and "templates" in r.json()
    r = raw_request(port, f"GET /api/v1/templates HTTP/1.1\r\n{UPGRADE}\r\n".encode())
    assert_envelope(r, 401, "UNAUTHENTICATED")
    r = raw_request(port, f"POST /livez HTTP/1.1\r\n{UPGRADE}Content-Length: 0\r\n\r\n".encode())
    assert_envelope(r, 405, "METHOD_NOT_ALLOWED")
    # the parser would take the body for the other protocol's data: refused, never answered as if bodiless
    body = b'{"templateId": "up", "imageId": "ami-1"}'
    for framing in (f"Content-Length: {len(body)}", "Transfer-Encoding: chunked"):
        sent = body if framing.startswith("Content") else b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        head = f"POST /api/v1/templates HTTP/1.1\r\n{UPGRADE}Authorization: {key}\r\n{framing}\r\n\r\n"
        r = raw_request(port, head.encode() + sent)
        env = assert_envelope(r, 400, "VALIDATION_ERROR")
        assert env["details"]["field"] == "upgrade" and r.headers["connection"] == "close"


def test_a_websocket_client_is_refused_in_the_envelope(served: tuple[int, str]) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    port, _ = served
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://127.0.0.1:{port}/livez", open_timeout=10)
    response = refused.value.response
    assert response.status_code == 200 and response.headers["x-request-id"]  # the plain HTTP answer
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10)
    response = refused.value.response
    assert response.status_code == 404 and b'"error_code":"NOT_FOUND"' in response.body


def test_the_app_refuses_the_websocket_scope_in_the_envelope(tmp_path: Path) -> None:
    """Behind an ASGI server that does speak WebSocket (uvicorn's default `ws`), the app itself refuses."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from pluginsdk.config import load_settings
    from pluginsdk.server import create_app

    app = create_app(load_settings(config=base_config(tmp_path), environ={}))
    with threaded_server(app, "auto") as port, pytest.raises(InvalidStatus) as refused:
        connect(f"ws://127.0.0.1:{port}/api/v1/templates", open_timeout=10)
    response = refused.value.response
    assert response.status_code == 404 and response.headers["x-request-id"]
    assert response.headers["content-type"] == "application/json"
    assert b'"error_code":"NOT_FOUND"' in response.body and b"WebSocket" in response.body
