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

One write per response: uvicorn writes a response's status line and headers, then its body, as two
`transport.write` calls; on the default asyncio loop each is a `send()` system call, and on loopback each
send also runs the receiver's TCP path and wakes it (measured: a third of the server's busy time under
load). `CorkedTransport` buffers writes; the protocol flushes the buffer the moment a response is complete.
Anything else written (a streamed body, `100 Continue`) goes out at the next step of the loop at the latest
(`call_soon`). Closing flushes first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol  # uvicorn[standard]: httptools

from ..errors import SDKError, ValidationError
from .limits import (
    MAX_HEADER_BYTES,
    MAX_HEADER_LINE_BYTES,
    MAX_HEADERS,
    MAX_URL_BYTES,
    headers_too_large,
    uri_too_long,
)

__all__ = ["CorkedTransport", "DoorHttpToolsProtocol"]

OVERRIDDEN = (
    "connection_made",
    "data_received",
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


class DoorHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with head limits, envelope errors and one write per response."""

    _corked: CorkedTransport
    _refusal: SDKError | None = None
    _in_head = True
    _head_bytes = 0
    _url_bytes = 0
    _lines = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._corked = CorkedTransport(transport, self.loop)
        super().connection_made(self._corked)  # type: ignore[arg-type]

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
        self._in_head = False
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """Whatever the parser refused, answered in the error envelope (then the connection closes)."""
        from .._logs import new_request_id
        from .app import error_body

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
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()

    def on_response_complete(self) -> None:
        self._corked.flush()  # the whole response, now, in one send
        super().on_response_complete()
