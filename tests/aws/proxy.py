"""A loopback HTTP proxy in front of moto: counts AWS API calls and injects faults.

Both our engine and the peer point their AWS endpoint here, so the call
counts of the benchmark are measured the same way for both. Tests use it to
make AWS answer as it does under load (throttling, capacity errors) and to
hold a response after moto acted, so the engine can be killed mid-launch.
Only loopback traffic: it forwards to the moto server it was given. `GET /__calls` answers the
counts as JSON (benchmark workers read them between phases).
"""

from __future__ import annotations

import http.client
import json
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["AwsProxy"]


@dataclass
class _Fault:
    action: str
    code: str
    message: str
    status: int
    times: int
    after: bool = False
    """Forward to moto first (AWS acted), then answer the error: a 5xx that hides a success."""


@dataclass
class _Hold:
    action: str
    claimed: bool = False
    forwarded: threading.Event = field(default_factory=threading.Event)
    """Set once moto has answered (so it acted); the answer then waits for `release`."""
    release: threading.Event = field(default_factory=threading.Event)


class AwsProxy:
    """`url` forwards to `upstream`; `calls` counts actions; `fail()` and `hold()` shape the answers."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self.calls: Counter[str] = Counter()
        self._faults: list[_Fault] = []
        self._holds: list[_Hold] = []
        self._lock = threading.Lock()
        self._serial = threading.Lock()
        self._local = threading.local()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                proxy._handle(self)

            def do_GET(self) -> None:
                proxy._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> AwsProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        for h in self._holds:
            h.release.set()
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self._faults.clear()
            for h in self._holds:
                h.release.set()
            self._holds.clear()

    def total(self) -> int:
        return sum(self.calls.values())

    def fail(
        self, action: str, code: str, message: str = "", *, status: int = 400, times: int = 1, after: bool = False
    ) -> None:
        """The next `times` calls of `action` get this AWS error instead of reaching moto (`after`: once moto
        has acted on them, as when AWS did the work and the answer was lost to a 5xx)."""
        with self._lock:
            self._faults.append(_Fault(action, code, message or code, status, times, after))

    def hold(self, action: str) -> _Hold:
        """The next call of `action` reaches moto, but its answer waits until `release` is set."""
        h = _Hold(action)
        with self._lock:
            self._holds.append(h)
        return h

    # -- serving -----------------------------------------------------------
    def _conn(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=60)
            self._local.conn = conn
        return conn

    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        body = req.rfile.read(int(req.headers.get("Content-Length") or 0))
        if req.path == "/__calls":  # the counts so far, for benchmark workers in other processes
            with self._lock:
                counts = json.dumps(dict(self.calls)).encode()
            return self._reply(req, 200, counts, {"Content-Type": "application/json"})
        query = parse_qs(body.decode("utf-8", "replace")) if body else parse_qs(urlsplit(req.path).query)
        action = (query.get("Action") or [""])[0]
        service = "autoscaling" if "/autoscaling/" in (req.headers.get("Authorization") or "") else "ec2"
        if action:
            with self._lock:
                self.calls[action] += 1
                fault = next((f for f in self._faults if f.action == action and f.times > 0), None)
                if fault is not None:
                    fault.times -= 1
                hold = next((h for h in self._holds if h.action == action and not h.claimed), None)
                if hold is not None:
                    hold.claimed = True  # the next call of this action passes freely
            if fault is not None and not fault.after:
                return self._reply(req, fault.status, _error_xml(service, fault.code, fault.message), {})
        else:
            hold = fault = None
        headers = {k: v for k, v in req.headers.items() if k.lower() not in ("connection", "keep-alive")}
        status, out_headers, data = self._forward(req.command, req.path, body, headers)
        if hold is not None:
            hold.forwarded.set()
            hold.release.wait(60)
        if fault is not None:  # `after`: moto acted, the caller hears the error
            return self._reply(req, fault.status, _error_xml(service, fault.code, fault.message), {})
        self._reply(req, status, data, out_headers)

    def _forward(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        with self._serial:  # one call at a time: moto's server races on concurrent launches into one subnet
            return self._forward_one(method, path, body, headers)

    def _forward_one(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                keep = {
                    k: v
                    for k, v in resp.getheaders()
                    if k.lower() not in ("transfer-encoding", "connection", "content-length")
                }
                return resp.status, keep, data
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _reply(req: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str]) -> None:
        try:
            req.send_response(status)
            for k, v in headers.items():
                req.send_header(k, v)
            if not any(k.lower() == "content-type" for k in headers):
                req.send_header("Content-Type", "text/xml")
            req.send_header("Content-Length", str(len(data)))
            req.end_headers()
            req.wfile.write(data)
        except OSError:  # the client went away (killed mid-call)
            pass


def _error_xml(service: str, code: str, message: str) -> bytes:
    rid = uuid.uuid4()
    if service == "ec2":
        return (
            f'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error></Errors><RequestID>{rid}</RequestID></Response>"
        ).encode()
    return (
        f'<ErrorResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><Error><Type>Sender</Type>'
        f"<Code>{code}</Code><Message>{message}</Message></Error><RequestId>{rid}</RequestId></ErrorResponse>"
    ).encode()
