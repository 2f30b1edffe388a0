"""uvicorn's httptools protocol sending each response in one write.

uvicorn writes a response's status line and headers, then its body, as two `transport.write` calls; on the
default asyncio loop each is a `send()` system call, and on loopback each send also runs the receiver's TCP
path and wakes it (measured here: the two sends were a third of the server's busy time under load). `CorkedTransport`
buffers writes; the protocol flushes the buffer the moment a response is complete, so a response leaves in
one `send()` without waiting. Anything else written (a streamed body, `100 Continue`) goes out at the next
step of the loop at the latest (`call_soon`). Closing flushes first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # uvicorn[standard] brings httptools

__all__ = ["CorkedHttpToolsProtocol", "CorkedTransport"]


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


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol writing through a `CorkedTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._corked = CorkedTransport(transport, self.loop)
        super().connection_made(self._corked)  # type: ignore[arg-type]

    def on_response_complete(self) -> None:
        self._corked.flush()  # the whole response, now, in one send
        super().on_response_complete()
