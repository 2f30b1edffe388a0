"""A lean HTTP/1.1 keep-alive client for the remote backend's own connections.

httpx's `AsyncClient` spends far more CPU per call than the round trip itself (URL parsing and merging,
cookie jar, header models, httpcore's pool and h11 state machine): measured here ~0.5 ms a request before
any I/O, which alone is half the remote-SDK overhead budget. This client does only what the backend needs:
one base URL, fixed headers, `METHOD path?query` with an optional JSON body, a pool of keep-alive
connections over asyncio streams, and responses framed by Content-Length, chunked encoding or close.

Failures are raised as the httpx exceptions the backend already handles (`ConnectError`, `ConnectTimeout`,
`ReadTimeout`, `RemoteProtocolError`, ...), so retries, backoff and error mapping are the backend's, shared
with the httpx path. A pooled connection the server closed while idle is detected and replaced; one that
breaks before any response byte arrives is retried once on a fresh connection for idempotent requests.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx

__all__ = ["LeanHTTP", "Reply", "lean_supported"]

_MAX_HEAD = 64 * 1024
_MAX_IDLE = 20


@dataclass(slots=True)
class Reply:
    """What the backend reads from a response, from either client."""

    status_code: int
    headers: Mapping[str, str]
    """Lower-case names (httpx's Headers are case-insensitive)."""
    content: bytes


def lean_supported(url: str, headers: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Whether the lean client can stand in for httpx here: http(s) URL, no proxy configured in the
    environment (httpx would use it), header values that are plain latin-1 without line breaks."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        return False
    if any(k.lower() in ("http_proxy", "https_proxy", "all_proxy") and v for k, v in environ.items()):
        return False
    for value in headers.values():
        if "\r" in value or "\n" in value:
            return False
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            return False
    return True


class _Conn:
    __slots__ = ("loop", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.loop = asyncio.get_running_loop()

    def usable(self) -> bool:
        return (
            self.loop is asyncio.get_running_loop()
            and not self.reader.at_eof()
            and not self.writer.transport.is_closing()
            and self.reader.exception() is None
        )

    def close(self) -> None:
        if self.loop is asyncio.get_running_loop():
            self.writer.close()
        else:  # a connection of a loop that is gone: drop the socket only
            sock = self.writer.transport.get_extra_info("socket")
            if sock is not None:
                sock.close()


class _Stale(Exception):
    """A reused connection broke before any byte of the response arrived."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class LeanHTTP:
    """Keep-alive HTTP/1.1 client for one base URL (see the module docstring)."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float, max_connections: int = 100) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or ""
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        default_port = self.port == (443 if self.tls else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.netloc = host if default_port else f"{host}:{self.port}"
        fixed = {"Host": self.netloc, "Accept": "*/*", **headers}
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self.timeout = timeout
        self._idle: list[_Conn] = []
        self._slots = asyncio.Semaphore(max_connections)
        self._ssl: Any = None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _head(self, method: str, path: str, query: list[tuple[str, str]] | None, length: int | None) -> bytes:
        target = quote(self.prefix + path, safe="/%:@!$&'()*+,;=-._~")
        if query:
            target += "?" + urlencode(query)
        head = f"{method} {target} HTTP/1.1\r\n".encode("latin-1") + self._fixed
        if length is not None:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % length
        return head + b"\r\n"

    async def request(
        self, method: str, path: str, query: list[tuple[str, str]] | None = None, json_body: Any = None,
        *, idempotent: bool = False,
    ) -> Reply:  # fmt: skip
        body = None
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        data = self._head(method, path, query, None if body is None else len(body))
        if body is not None:
            data += body
        async with self._slots:
            for _ in range(2):
                conn, reused = await self._acquire()
                try:
                    return await self._exchange(conn, method, data, reused)
                except _Stale as stale:
                    conn.close()
                    await self.aclose()  # its idle siblings are likely dead too (a server restart)
                    if not idempotent:
                        raise httpx.RemoteProtocolError(
                            f"Server disconnected without sending a response ({stale.cause!r})."
                        ) from stale.cause
                except BaseException:
                    conn.close()
                    raise
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    async def _acquire(self) -> tuple[_Conn, bool]:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn, True
            conn.close()
        try:
            async with asyncio.timeout(self.timeout):
                if self.tls and self._ssl is None:
                    self._ssl = httpx.create_ssl_context()
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=self._ssl if self.tls else None, limit=_MAX_HEAD
                )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"Timed out connecting to {self.netloc}.") from exc
        except OSError as exc:
            raise httpx.ConnectError(f"Cannot connect to {self.netloc}: {exc}") from exc
        return _Conn(reader, writer), False

    async def _exchange(self, conn: _Conn, method: str, data: bytes, reused: bool) -> Reply:
        reader = conn.reader
        started = False
        try:
            async with asyncio.timeout(self.timeout):
                conn.writer.write(data)
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError as exc:
                    if reused and not exc.partial:
                        raise _Stale(exc) from exc
                    raise httpx.RemoteProtocolError("Server disconnected without sending a response.") from exc
                started = True
                status, headers = _parse_head(head)
                content, keep = await _read_body(reader, method, status, headers)
        except (_Stale, httpx.HTTPError):
            raise
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"No response from {self.netloc} within {self.timeout}s.") from exc
        except asyncio.LimitOverrunError as exc:
            raise httpx.RemoteProtocolError("The response head is too large.") from exc
        except asyncio.IncompleteReadError as exc:
            raise httpx.RemoteProtocolError("Server disconnected in the middle of a response.") from exc
        except (ConnectionError, OSError) as exc:
            if reused and not started:
                raise _Stale(exc) from exc
            raise httpx.ReadError(f"Connection to {self.netloc} failed: {exc!r}") from exc
        encoding = headers.get("content-encoding", "identity").lower()
        if encoding in ("gzip", "deflate"):
            try:
                content = zlib.decompress(content, 47 if encoding == "gzip" else 15)
            except zlib.error as exc:
                raise httpx.DecodingError(f"Cannot decode a {encoding} response.") from exc
        elif encoding != "identity":
            raise httpx.DecodingError(f"Unsupported response encoding {encoding!r}.")
        if keep and len(self._idle) < _MAX_IDLE:
            self._idle.append(conn)
        else:
            conn.close()
        return Reply(status, headers, content)


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise httpx.RemoteProtocolError(f"Not an HTTP/1.x response: {lines[0][:80]!r}.")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise httpx.RemoteProtocolError("Malformed response header.")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    headers[":version"] = version
    return int(code), headers


async def _read_body(
    reader: asyncio.StreamReader, method: str, status: int, headers: dict[str, str]
) -> tuple[bytes, bool]:
    """(body, connection reusable) per RFC 9112 §6.3."""
    version = headers.pop(":version")
    connection = headers.get("connection", "").lower()
    keep = "close" not in connection and (version == "HTTP/1.1" or "keep-alive" in connection)
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return b"", keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: list[bytes] = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise httpx.RemoteProtocolError("Malformed chunked response.") from exc
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return b"".join(chunks), keep
            chunks.append(await reader.readexactly(size + 2))
            chunks[-1] = chunks[-1][:-2]
    length = headers.get("content-length")
    if length is not None:
        try:
            n = int(length.split(",")[0])
        except ValueError as exc:
            raise httpx.RemoteProtocolError("Malformed Content-Length.") from exc
        return (await reader.readexactly(n) if n else b""), keep
    return await reader.read(), False  # framed by the server closing the connection
