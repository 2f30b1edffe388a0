"""Connections that hold the server without asking anything are closed, and the server serves a bounded number.

Against a real served process (`serve()`, as `pluginsdk server start` runs it), counted: idle connections and
half-sent request heads are closed after `api.header_timeout` (408 in the envelope for a partial head), a body
that has not arrived after `api.body_timeout` is 408, an idle keep-alive connection is closed after
`api.keep_alive_timeout`, and past `api.max_connections` a request is 503 in
the envelope until connections close.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.server.door import assert_envelope, raw_request, read_response, served_process
from tests.support.backends import base_config

LIVEZ = b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"


@contextmanager
def _sockets(port: int, count: int, send: bytes = b"") -> Iterator[list[socket.socket]]:
    socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]
    try:
        for sock in socks:
            if send:
                sock.sendall(send)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    """Everything the server sends until it closes the connection (fails if it stays open `seconds`)."""
    sock.settimeout(seconds)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _honest_request_succeeds(port: int) -> None:
    r = raw_request(port, LIVEZ)
    assert r.status == 200 and r.json() == {"status": "ok"} and r.headers["x-request-id"]


def test_idle_and_half_head_connections_are_closed_after_the_header_timeout(tmp_path: Path) -> None:
    config = base_config(tmp_path, api={"header_timeout": 1.5, "keep_alive_timeout": 5, "max_connections": 200})
    with served_process(config, tmp_path / "server.log") as (port, _):
        with _sockets(port, 50) as idle, _sockets(port, 50, b"GET /livez HTTP/1.1\r\nHost: x\r\nX-A: ") as half:
            started = time.monotonic()
            _honest_request_succeeds(port)  # served while the 100 wait
            for sock in idle:
                assert _closed_within(sock, 10) == b""  # nothing asked: closed without an answer
            for sock in half:
                data = _closed_within(sock, 10)
                head, _, body = data.partition(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 408 ") and b"connection: close" in head.lower(), data[:300]
                assert b'"error_code":"REQUEST_TIMEOUT"' in body and b'"success":false' in body
            assert 1.4 < time.monotonic() - started < 8
        _honest_request_succeeds(port)


def test_a_head_sent_slowly_is_cut_at_the_header_timeout(tmp_path: Path) -> None:
    """Each byte resets nothing: the head as a whole must arrive within the timeout (slowloris)."""
    config = base_config(tmp_path, api={"header_timeout": 1.0})
    with served_process(config, tmp_path / "server.log") as (port, _):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            started = time.monotonic()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for byte in b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40:
                    sock.sendall(bytes([byte]))
                    time.sleep(0.1)
                    if time.monotonic() - started > 3:
                        break
            r = read_response(sock)
            assert_envelope(r, 408, "REQUEST_TIMEOUT")
            assert r.headers["connection"] == "close" and time.monotonic() - started < 4
        _honest_request_succeeds(port)


def test_a_body_that_does_not_arrive_in_time_is_408_and_the_connection_closes(tmp_path: Path) -> None:
    """Half a body held open, or a body trickled byte by byte, holds the connection no longer than
    `api.body_timeout` (before authentication: no credential is needed to be cut off)."""
    config = base_config(tmp_path, api={"header_timeout": 30, "body_timeout": 1.0, "max_connections": 200})
    head = b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    with served_process(config, tmp_path / "server.log") as (port, _):
        with _sockets(port, 20, head + b'{"templateId": ') as held:
            started = time.monotonic()
            trickle = socket.create_connection(("127.0.0.1", port), timeout=10)
            trickle.sendall(head)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for _ in range(30):
                    trickle.sendall(b" ")
                    time.sleep(0.1)
            _honest_request_succeeds(port)
            for sock in [*held, trickle]:
                data = _closed_within(sock, 10)
                status, _, body = data.partition(b"\r\n\r\n")
                assert status.startswith(b"HTTP/1.1 408 ") and b"connection: close" in status.lower(), data[:300]
                assert b'"error_code":"REQUEST_TIMEOUT"' in body and b'"field":"body"' in body
            trickle.close()
            assert time.monotonic() - started < 8
        _honest_request_succeeds(port)


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(tmp_path: Path) -> None:
    config = base_config(tmp_path, api={"header_timeout": 30, "keep_alive_timeout": 1.0})
    with (
        served_process(config, tmp_path / "server.log") as (port, _),
        socket.create_connection(("127.0.0.1", port), timeout=10) as sock,
    ):
        for _ in range(2):  # kept alive between requests sent in time
            sock.sendall(LIVEZ)
            assert read_response(sock).status == 200
        started = time.monotonic()
        assert _closed_within(sock, 10) == b""
        assert 0.9 < time.monotonic() - started < 5


def test_past_the_connection_limit_requests_are_503_in_the_envelope_until_connections_close(tmp_path: Path) -> None:
    limit = 20
    config = base_config(tmp_path, api={"header_timeout": 60, "max_connections": limit})
    with served_process(config, tmp_path / "server.log") as (port, _):
        with _sockets(port, limit - 1):
            time.sleep(0.5)  # the server has taken them
            _honest_request_succeeds(port)  # the limit-th connection is served
            time.sleep(0.2)  # the client closed it: the server drops it
            with _sockets(port, 1):
                time.sleep(0.5)
                for _ in range(3):  # every request past the limit, on a connection of its own
                    r = raw_request(port, LIVEZ)
                    env = assert_envelope(r, 503, "SERVICE_UNAVAILABLE")
                    assert r.headers["connection"] == "close" and r.headers["retry-after"] == "1"
                    assert str(limit) in env["error"]
        time.sleep(0.5)  # the held connections closed: service recovers
        for _ in range(3):
            _honest_request_succeeds(port)
