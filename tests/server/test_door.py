"""One request path: every route and every failure through the same door, in the one error envelope.

Run on both HTTP protocols: ours (`DoorHttpToolsProtocol`, what `serve()` runs) and uvicorn's stock one
(the fallback when ours does not import), so the limits do not depend on which one is in front.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest

from pluginsdk.config import load_settings
from pluginsdk.operations import CATALOG
from tests.server.door import Raw, assert_envelope, raw_request, reader_key, threaded_server
from tests.support.backends import base_config
from tests.support.remote import admin_key


class Served(NamedTuple):
    port: int
    admin: str
    reader: str
    config: dict[str, Any]
    client: httpx.Client

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _protocol(name: str) -> Any:
    from pluginsdk.server import http_protocol

    return http_protocol() if name == "door" else "auto"


@pytest.fixture(params=["door", "stock"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    from pluginsdk.server import create_app

    config = base_config(tmp_path)
    admin = asyncio.run(admin_key(config))
    reader = asyncio.run(reader_key(config))
    with (
        threaded_server(create_app(load_settings(config=config, environ={})), _protocol(request.param)) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        yield Served(port, admin, reader, config, client)


def _get(s: Served, method: str, path: str, **kw: Any) -> httpx.Response:
    """One request through the fixture's client (one keep-alive connection: a new client costs ~25 ms)."""
    return s.client.request(method, path, **kw)


def _raw(r: httpx.Response) -> Raw:
    return Raw(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content)


def _served_methods(path: str) -> set[str]:
    """Methods the catalog binds to the path template the concrete `path` belongs to (OpenAPI's rule: the
    template with literal segments where the others have parameters), computed apart from the router."""
    bound: dict[str, set[str]] = {}
    for spec in CATALOG.values():
        assert spec.rest is not None
        for pattern in spec.rest.paths:
            if re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", pattern), path):
                bound.setdefault(pattern, set()).add(spec.rest.method)
    best = min(bound, key=lambda p: [s.startswith("{") for s in p.split("/")])
    return bound[best]


def _fill(path: str) -> str:
    return re.sub(r"{(\w+)}", lambda m: f"x-{m.group(1)}", path)


# -- 404 / 405 / OPTIONS ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/nope", "/api/v1/templates/", "/api/v1", "//", "/api/v1/templates/a/b/c"])
def test_unknown_path_is_404_in_the_envelope(served: Served, path: str) -> None:
    for key in (served.admin, None):  # the same answer with or without credentials
        r = _get(served, "GET", path, headers={"Authorization": key} if key else {})
        assert_envelope(_raw(r), 404, "NOT_FOUND")


def test_wrong_method_is_405_with_the_methods_served(served: Served) -> None:
    paths = sorted({_fill(p) for spec in CATALOG.values() if spec.rest for p in spec.rest.paths})
    assert len(paths) > 40
    for path in paths:
        served_methods = _served_methods(path)
        for method in sorted({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"} - served_methods):
            r = _get(served, method, path, headers={"Authorization": served.admin})
            assert r.status_code == 405, (method, path, r.status_code)
            if method != "HEAD":
                assert_envelope(_raw(r), 405, "METHOD_NOT_ALLOWED")
            allow = {m.strip() for m in r.headers["allow"].split(",")}
            assert allow == served_methods | {"OPTIONS"}, (method, path, allow)


def test_options_answers_with_the_methods_really_served(served: Served) -> None:
    for spec in CATALOG.values():
        assert spec.rest is not None
        for path in spec.rest.paths:
            r = _get(served, "OPTIONS", _fill(path))  # no credentials needed to ask
            assert r.status_code == 204 and r.content == b""
            allow = {m.strip() for m in r.headers["allow"].split(",")}
            assert allow == _served_methods(_fill(path)) | {"OPTIONS"}
            for method in allow - {"OPTIONS"}:  # and each method listed is served (never 404/405)
                body = {} if method in ("POST", "PUT") else None
                answered = _get(served, method, _fill(path), json=body, headers={"Authorization": served.admin})
                assert answered.status_code not in (405,), (method, path)
                if answered.status_code == 404:
                    assert answered.json()["error_code"] != "NOT_FOUND" or "route" not in answered.json()["error"]
    assert _get(served, "OPTIONS", "/nope").status_code == 404


# -- request head limits: 414 / 431 / malformed ----------------------------------------------------------------
def test_too_long_request_target_is_414(served: Served) -> None:
    for target in ("/api/v1/templates/" + "a" * 9000, "/api/v1/templates?limit=1&x=" + "b" * 9000):
        head = f"GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: {served.admin}\r\n\r\n"
        r = raw_request(served.port, head.encode())
        env = assert_envelope(r, 414, "VALIDATION_ERROR")
        assert len(r.body) < 1000 and "8192" in env["error"]


@pytest.mark.parametrize(
    "headers",
    [
        "X-Big: " + "h" * 9000 + "\r\n",  # one line too long
        "".join(f"X-H{i}: v\r\n" for i in range(120)),  # too many lines
        "".join(f"X-H{i}: " + "v" * 4000 + "\r\n" for i in range(20)),  # head too large (80 KB)
    ],
    ids=["line", "count", "total"],
)
def test_too_large_headers_are_431(served: Served, headers: str) -> None:
    r = raw_request(served.port, f"GET /api/v1/templates HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    assert_envelope(r, 431, "VALIDATION_ERROR")


def test_limits_come_before_authentication(served: Served) -> None:
    """No credentials, wrong credentials: the limit answers first (the caller learns nothing else)."""
    for auth in ("", "Authorization: psdk_wrong\r\n"):
        r = raw_request(served.port, f"GET /api/v1/{'x' * 9000} HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
        assert_envelope(r, 414)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /api/v1/templates HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET /api/v1/temp\xc3\xa9lates HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /api/v1/templates HTTP/1.1\r\nBad Header\r\n\r\n",
        b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
    ],
    ids=[
        "request-line",
        "version",
        "non-ascii-path",
        "header",
        "content-length",
        "negative-length",
        "smuggling",
        "two-lengths",
    ],
)
def test_malformed_requests_are_400_in_the_envelope(tmp_path: Path, request_bytes: bytes) -> None:
    """The parser's refusals, on the protocol `serve()` runs (uvicorn's stock protocol answers plain text)."""
    from pluginsdk.server import create_app

    app = create_app(load_settings(config=base_config(tmp_path), environ={}))
    with threaded_server(app, _protocol("door")) as port:
        r = raw_request(port, request_bytes)
        assert_envelope(r, 400, "VALIDATION_ERROR")
        assert r.headers["connection"] == "close"


# -- body limit ----------------------------------------------------------------------------------------------
def test_declared_oversized_body_is_413_before_reading_or_authenticating(served: Served) -> None:
    for path in ("/api/v1/templates", "/api/v1/templates/x", "/nope"):  # every path, served or not
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {2 << 20}\r\n\r\n"
        r = raw_request(served.port, head.encode())  # the body is never sent: the answer comes without it
        env = assert_envelope(r, 413, "VALIDATION_ERROR")
        assert r.headers["connection"] == "close" and env["details"]["field"] == "body"


def test_a_body_the_route_does_not_read_closes_the_connection(served: Served) -> None:
    """Not read, not buffered: a body sent to a route without one (or to no route) ends the connection."""
    for method, path in (("GET", "/api/v1/templates"), ("POST", "/nope")):
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {served.admin}\r\nContent-Length: 10\r\n\r\n"
        r = raw_request(served.port, head.encode() + b"0123456789")
        assert r.headers["connection"] == "close", (path, r.headers)
    r = raw_request(
        served.port, f"GET /api/v1/templates HTTP/1.1\r\nHost: x\r\nAuthorization: {served.admin}\r\n\r\n".encode()
    )
    assert r.status == 200 and "connection" not in r.headers  # no body: keep-alive as usual


def test_streamed_oversized_body_is_413(served: Served) -> None:
    head = b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"%x\r\n%s\r\n" % (65536, b"a" * 65536)
    r = raw_request(served.port, head + chunk * 24 + b"0\r\n\r\n")  # 1.5 MiB, no length declared
    assert_envelope(r, 413, "VALIDATION_ERROR")


def test_body_limit_is_configurable_and_the_remote_sdk_sees_a_validation_error(tmp_path: Path) -> None:
    from pluginsdk import PluginSDK, ValidationError
    from pluginsdk.server import create_app

    config = base_config(tmp_path, api={"max_body_bytes": 2000})
    key = asyncio.run(admin_key(config))
    with threaded_server(create_app(load_settings(config=config, environ={})), _protocol("door")) as port:

        async def calls() -> None:
            async with PluginSDK(backend="remote", api_url=f"http://127.0.0.1:{port}", api_key=key) as sdk:
                await sdk.create_template(template_id="small", image_id="ami-1", description="d" * 500)
                with pytest.raises(ValidationError) as exc:
                    await sdk.create_template(template_id="big", image_id="ami-1", description="d" * 3000)
                assert "larger than 2000 bytes" in exc.value.message
                assert [t.template_id for t in (await sdk.list_templates()).templates] == ["small"]

        asyncio.run(calls())


def test_body_limit_boundary(tmp_path: Path) -> None:
    """Exactly the limit is read (and judged on its content); one byte more is 413."""
    from pluginsdk.server import create_app

    config = base_config(tmp_path, api={"max_body_bytes": 2000})
    key = asyncio.run(admin_key(config))
    with threaded_server(create_app(load_settings(config=config, environ={})), _protocol("door")) as port:
        prefix = b'{"templateId": "edge", "imageId": "ami-1", "description": "'
        for size, status in ((2000, 201), (2001, 413)):
            body = prefix + b"d" * (size - len(prefix) - 2) + b'"}'
            assert len(body) == size
            r = httpx.post(f"http://127.0.0.1:{port}/api/v1/templates", content=body, headers={"Authorization": key})
            assert r.status_code == status, (size, r.text)


def test_request_id_is_clipped_and_an_oversized_one_is_431(served: Served) -> None:
    r = _get(served, "GET", "/api/v1/templates", headers={"Authorization": served.admin, "X-Request-ID": "r" * 500})
    assert r.status_code == 200 and r.headers["x-request-id"] == "r" * 128
    r = _get(served, "GET", "/api/v1/templates", headers={"X-Request-ID": "r" * 9000})
    assert_envelope(_raw(r), 431)


# -- strict JSON -----------------------------------------------------------------------------------------------
HOSTILE = {
    "NaN": b'{"templateId": "t-nan", "imageId": "ami-1", "instanceTypes": {"m5": NaN}}',
    "Infinity": b'{"templateId": "t-inf", "imageId": "ami-1", "instanceTypes": {"m5": Infinity}}',
    "-Infinity": b'{"templateId": "t-ninf", "imageId": "ami-1", "instanceTypes": {"m5": -Infinity}}',
    "overflow": b'{"templateId": "t-big", "imageId": "ami-1", "instanceTypes": {"m5": 1e999}}',
    "lone-surrogate": b'{"templateId": "t-sur\\ud800", "imageId": "ami-1"}',
    "lone-low-surrogate": b'{"templateId": "t-sur", "imageId": "ami-\\udc00x"}',
    "raw-surrogate": b'{"templateId": "t-raw", "imageId": "ami-\xed\xa0\x80"}',
    "not-utf8": b'{"templateId": "t-latin", "imageId": "ami-\xe9"}',
    "deep": b'{"templateId": "t-deep", "imageId": "ami-1", "tags": ' + b"[" * 40 + b"]" * 40 + b"}",
    "very-deep": b"[" * 100_000 + b"]" * 100_000,
    "trailing": b'{"templateId": "t-trail", "imageId": "ami-1"} {}',
}


@pytest.mark.parametrize("body", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_json_is_400_and_nothing_is_stored(served: Served, body: bytes) -> None:
    auth = {"Authorization": served.admin, "Content-Type": "application/json"}
    r = _get(served, "POST", "/api/v1/templates", content=body, headers=auth)
    env = assert_envelope(_raw(r), 400, "VALIDATION_ERROR")
    assert "not valid JSON" in env["error"] and len(r.content) < 2000
    listing = _get(served, "GET", "/api/v1/templates", headers=auth)
    assert listing.status_code == 200 and listing.json()["templates"] == []


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/templates", b'{"templateId": "t-bool", "imageId": "ami-1", "validateOnly": 0}'),
        ("/api/v1/templates", b'{"templateId": "t-list", "imageId": "ami-1", "subnetIds": "subnet-1"}'),
        ("/api/v1/templates", b'{"templateId": "t-num", "imageId": "ami-1", "maxNumber": "5"}'),
        ("/api/v1/templates", b"null"),
        ("/roles", b'{"roleName": "r-bool", "description": "typed", "mfaRequired": 1}'),
        ("/api/v1/machines/cleanup", b'{"older_than_days": false}'),
    ],
)
def test_json_types_are_the_documented_ones(served: Served, path: str, body: bytes) -> None:
    """Lax coercion suits query strings and in-process callers, not typed JSON: `0` is not a boolean."""
    auth = {"Authorization": served.admin, "Content-Type": "application/json"}
    r = _get(served, "POST", path, content=body, headers=auth)
    assert_envelope(_raw(r), 400, "VALIDATION_ERROR")
    assert _get(served, "GET", "/api/v1/templates", headers=auth).json()["templates"] == []
    assert "r-bool" not in _get(served, "GET", "/roles", headers=auth).text


def test_nesting_up_to_the_documented_limit_parses(served: Served) -> None:
    from pluginsdk.files import MAX_DEPTH, TOO_DEEP

    auth = {"Authorization": served.admin}
    inside = b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1)  # the object is the first level
    r = _get(served, "POST", "/api/v1/templates", content=b'{"tags": ' + inside + b"}", headers=auth)
    assert r.status_code == 400 and "not valid JSON" not in r.json()["error"]  # the field's type is what is wrong
    deeper = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    r = _get(served, "POST", "/api/v1/templates", content=b'{"tags": ' + deeper + b"}", headers=auth)
    assert r.status_code == 400 and r.json()["error"] == f"The request body is not valid JSON: {TOO_DEEP}."


# -- 403 before 400 --------------------------------------------------------------------------------------------
DENIED_BODIES = [b"{broken", b'{"templateId": 5}', b"[]", b'{"x": NaN}', b"[" * 50 + b"]" * 50, b"", b"\xff\xfe"]


@pytest.mark.parametrize("body", DENIED_BODIES)
def test_a_caller_who_may_not_call_a_route_gets_403_whatever_its_body(served: Served, body: bytes) -> None:
    reader = {"Authorization": served.reader, "Content-Type": "application/json"}
    for method, path in (("POST", "/api/v1/templates"), ("PUT", "/api/v1/templates/web"), ("POST", "/roles")):
        r = _get(served, method, path, content=body, headers=reader)
        assert_envelope(_raw(r), 403, "FORBIDDEN")
    # the same bodies from the administrator are 400: the 403 above is tier 1, not the body
    r = _get(served, "POST", "/api/v1/templates", content=body, headers={"Authorization": served.admin})
    assert_envelope(_raw(r), 400, "VALIDATION_ERROR")


def test_path_and_query_input_of_a_denied_route_is_403_too(served: Served) -> None:
    reader = {"Authorization": served.reader}
    r = _get(served, "DELETE", "/api/v1/templates/" + "%00" * 3, headers=reader)
    assert_envelope(_raw(r), 403, "FORBIDDEN")
    r = _get(served, "GET", "/user/managed?page_size=-5", headers=reader)
    assert_envelope(_raw(r), 403, "FORBIDDEN")
    r = _get(served, "GET", "/api/v1/templates?limit=0", headers=reader)  # a route it may call: the input is wrong
    assert_envelope(_raw(r), 400, "VALIDATION_ERROR")


def test_unauthenticated_bodies_are_401_not_400(served: Served) -> None:
    r = _get(served, "POST", "/api/v1/templates", content=b"{broken")
    assert_envelope(_raw(r), 401, "UNAUTHENTICATED")


# -- one door: request id, access log, 500 envelope ----------------------------------------------------------
def test_one_access_line_and_request_id_per_request(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pluginsdk.access")
    calls = [
        ("GET", "/api/v1/templates", 200),
        ("GET", "/nope", 404),
        ("PATCH", "/api/v1/templates", 405),
        ("GET", "/health", 200),
        ("GET", "/openapi.json", 200),
        ("GET", "/api/v1/templates/nope", 404),
    ]
    for i, (method, path, status) in enumerate(calls):
        rid = f"rid-{i}"
        r = _get(served, method, path, headers={"Authorization": served.admin, "X-Request-ID": rid})
        assert r.status_code == status and r.headers["x-request-id"] == rid
        assert r.headers.get_list("x-request-id") == [rid]
    deadline = time.monotonic() + 10  # the line is written once the response is sent
    while True:
        lines = [r.getMessage() for r in caplog.records if r.name == "pluginsdk.access"]
        if len(lines) >= len(calls) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    for i, (_, path, status) in enumerate(calls):
        mine = [line for line in lines if f'"rid-{i}"' in line]
        assert len(mine) == 1, (path, mine)
        assert f'"status": {status}' in mine[0] and f'"path": "{path}"' in mine[0]


def test_a_crashing_backend_is_a_500_envelope_without_internals(tmp_path: Path) -> None:
    """A third-party backend (the contract, not the engine) raising something unexpected."""
    from backends.local import LocalBackend
    from pluginsdk.server import create_app

    class Crashing(LocalBackend):
        async def execute(self, operation: Any, principal: Any = None, *, route_path: str | None = None) -> Any:
            raise RuntimeError("secret internal detail")

    config = base_config(tmp_path)
    key = asyncio.run(admin_key(config))
    backend = Crashing(load_settings(config=config, environ={}))
    asyncio.run(backend.start())
    app = create_app(backend)
    with threaded_server(app, _protocol("door")) as port:
        r = httpx.get(f"http://127.0.0.1:{port}/api/v1/templates", headers={"Authorization": key})
        env = assert_envelope(_raw(r), 500, "INTERNAL_ERROR")
        assert "secret" not in r.text and env["error"] == "Internal server error."


def test_the_server_reaches_the_engine_only_through_the_backend_contract() -> None:
    from pluginsdk.server import create_app

    server = Path(__file__).resolve().parents[2] / "pluginsdk" / "server"
    for source in server.glob("*.py"):
        assert "backends.local" not in source.read_text(), source
    with pytest.raises(TypeError, match="cannot be served"):
        create_app(object())


# -- the protocol fence ----------------------------------------------------------------------------------------
def test_stock_protocol_when_ours_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    from pluginsdk.server import http_protocol

    monkeypatch.delitem(sys.modules, "pluginsdk.server._protocol", raising=False)
    monkeypatch.setitem(sys.modules, "uvicorn.protocols.http.httptools_impl", None)  # import fails
    assert http_protocol() == "auto"


def test_stock_protocol_when_uvicorn_changed_a_method_we_override(monkeypatch: pytest.MonkeyPatch) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from pluginsdk.server import http_protocol

    monkeypatch.delitem(sys.modules, "pluginsdk.server._protocol", raising=False)
    monkeypatch.delattr(HttpToolsProtocol, "on_url")
    assert http_protocol() == "auto"
    monkeypatch.undo()
    assert http_protocol().__name__ == "DoorHttpToolsProtocol"


def test_documents_are_served_by_the_same_door(served: Served) -> None:
    docs = _get(served, "GET", "/docs", headers={"X-Request-ID": "docs-1"})
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "swagger" in docs.text.lower() and docs.headers["x-request-id"] == "docs-1"
    doc = _get(served, "GET", "/openapi.json")
    assert doc.headers["content-type"] == "application/json" and doc.json()["paths"]["/health"]
    assert _get(served, "POST", "/openapi.json").headers["allow"] == "GET, OPTIONS"
