"""uvicorn's httptools protocol with the request-head limits in the error envelope, one write per response.

This subclasses a private uvicorn class, so it is fenced: pyproject bounds uvicorn from above,
`pluginsdk.server.http_protocol()` falls back to uvicorn's stock protocol when this module does not import
(or the class lacks a method overridden here), and `.ci/newest-uvicorn` runs the server tests against the
newest uvicorn. On the stock protocol the app still answers 414/431 in the envelope (it checks the head it
is given); only the malformed-request 400 and the early cut-off of a huge head are this module's.

Head limits (`limits.py`), applied while the head is parsed so a huge head is never buffered: a request
target over `MAX_URL_BYTES` is 414; a header line over `MAX_HEADER_LINE_BYTES`, more than `MAX_HEADERS`
lines, or a head over `MAX_HEADER_BYTES` is 431; anything the parser refuses (a malformed request line or
header, a non-ASCII path) is 400. Each is the JSON error envelope with `Connection: close`.

Connection timeouts and limit: a connection has `header_timeout` seconds (`api.header_timeout`) to send a
complete request head, counted from when it opens and from the end of each response; past it the connection
is closed, with 408 in the envelope if part of a head came (after a response, uvicorn's `timeout_keep_alive`,
`api.keep_alive_timeout`, closes an idle connection too, whichever comes first; the body's deadline is the
app's, `api.body_timeout`). A request whose head completes while
the process holds more than `limit_concurrency` connections (`api.max_connections`), or runs that many
requests, is answered 503 in the envelope with `Connection: close` (uvicorn's own check answers plain text).

Upgrades: `serve()` runs uvicorn with `ws="none"`, so a request with `Upgrade: websocket` is answered as the
plain HTTP request it also is (the header ignored, as HTTP allows); the parser stops at an upgrade, so the
connection closes after that answer. The parser takes whatever follows an upgrade request's head for the
other protocol, never for its body, so a request that asks for an upgrade and declares a body is 400 (its
body would otherwise be lost, and the request answered as if it had none).

One write per response: uvicorn writes a response's status line and headers, then its body, as two
`transport.write` calls; on the default asyncio loop each is a `send()` system call, and on loopback each
send also runs the receiver's TCP path and wakes it (measured: a third of the server's busy time under
load). `CorkedTransport` buffers writes; the protocol flushes the buffer the moment a response is complete.
Anything else written (a streamed body, `100 Continue`) goes out at the next step of the loop at the latest
(`call_soon`). Closing flushes first.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol  # uvicorn[standard]: httptools

from ..errors import SDKError, ValidationError
from .limits import (
    HEADER_TIMEOUT,
    MAX_HEADER_BYTES,
    MAX_HEADER_LINE_BYTES,
    MAX_HEADERS,
    MAX_URL_BYTES,
    head_timed_out,
    headers_too_large,
    too_many_connections,
    uri_too_long,
)

__all__ = ["CorkedTransport", "DoorHttpToolsProtocol"]

OVERRIDDEN = (
    "connection_made",
    "connection_lost",
    "data_received",
    "_unsupported_upgrade_warning",
    "send_400_response",
    "on_message_begin",
    "on_url",
    "on_header",
    "on_headers_complete",
    "on_response_complete",
)
"""uvicorn methods this module overrides (all must exist, or the stock protocol is used)."""
_missing = [name for name in OVERRIDDEN if not callable(getattr(HttpToolsProtocol, name, None))]
if _missing:
    raise ImportError(f"uvicorn's HttpToolsProtocol lacks {', '.join(_missing)}")


class CorkedTransport:
    """A transport proxy that coalesces the writes of one event-loop step into one `write`."""

    __slots__ = ("_buffer", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._buffer: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._buffer:
            self._loop.call_soon(self._flush)
        self._buffer.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if self._buffer:
            data = b"".join(self._buffer) if len(self._buffer) > 1 else self._buffer[0]
            self._buffer.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._buffer.clear()
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(b) for b in self._buffer)

    def __getattr__(self, name: str) -> Any:  # everything else is the real transport's
        return getattr(self._transport, name)


class _Refused(Exception):
    """Raised from a parser callback to stop parsing; `_refusal` says what to answer."""


def _declares_body(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(
        name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0") for name, value in headers
    )


def _upgrade_with_body() -> ValidationError:
    return ValidationError(
        "This server speaks no protocol to upgrade to: send a request with a body without Upgrade.",
        details={"field": "upgrade", "value": None, "expected": "no Upgrade header on a request with a body"},
    )


class DoorHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with head limits, timeouts, envelope errors and one write per response."""

    header_timeout: ClassVar[float] = HEADER_TIMEOUT
    """Seconds to send a complete request head (`api.header_timeout`, set by `pluginsdk.server.operator_app`
    in the process that serves)."""
    _corked: CorkedTransport
    _refusal: SDKError | None = None
    _in_head = True
    _head_bytes = 0
    _url_bytes = 0
    _lines = 0
    _partial = False
    """Part of a request head came, not all of it."""
    _header_timer: asyncio.TimerHandle | None = None
    _max_connections: int | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the connection limit is checked here (answered in the envelope), not by uvicorn (plain text)
        self._max_connections, self.limit_concurrency = getattr(self, "limit_concurrency", None), None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._corked = CorkedTransport(transport, self.loop)
        super().connection_made(self._corked)  # type: ignore[arg-type]
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_timed_out)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        """No complete head in time: close (408 in the envelope first if part of a head came)."""
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self._partial:
            self._refusal = head_timed_out(self.header_timeout)
            self.send_400_response("")
        else:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_head and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEADER_BYTES:  # still no end of head: refuse before buffering more
                self._refusal = headers_too_large()
                self.send_400_response("")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes, self._url_bytes, self._lines = True, 0, 0, 0
        self._partial = True

    def on_url(self, url: bytes) -> None:
        self._url_bytes += len(url)
        if self._url_bytes > MAX_URL_BYTES:
            self._refusal = uri_too_long()
            raise _Refused
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._lines += 1
        if self._lines > MAX_HEADERS or len(name) + len(value) > MAX_HEADER_LINE_BYTES:
            self._refusal = headers_too_large()
            raise _Refused
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = self._partial = False
        self._disarm_header_timer()
        limit = self._max_connections
        if limit is not None and (len(self.connections) > limit or len(self.tasks) >= limit):
            self._refusal = too_many_connections(limit)
            raise _Refused
        if self.parser.should_upgrade() and _declares_body(self.headers):
            self._refusal = _upgrade_with_body()
            raise _Refused
        super().on_headers_complete()

    def _unsupported_upgrade_warning(self) -> None:
        """An upgrade this server does not speak: the request is answered as plain HTTP, then the connection
        closes (the parser stops at an upgrade)."""
        if self.cycle is not None:
            self.cycle.keep_alive = False

    def send_400_response(self, msg: str) -> None:
        """Whatever the parser refused, answered in the error envelope (then the connection closes)."""
        from ..logs import new_request_id
        from ._endpoint import error_body

        err = self._refusal or ValidationError(
            "The HTTP request is malformed.", details={"field": "request", "value": None, "expected": "HTTP/1.1"}
        )
        self._refusal = None
        body = error_body(err)
        content = [STATUS_LINE[err.http_status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"x-request-id: " + new_request_id().encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"retry-after: 1\r\n" if err.http_status == 503 else b"",
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()

    def on_response_complete(self) -> None:
        self._corked.flush()  # the whole response, now, in one send
        waiting = bool(self.pipeline)  # the next request's head is complete already
        super().on_response_complete()
        if not waiting and not self.transport.is_closing():
            self._arm_header_timer()
