"""An ASGI app served in process, as uvicorn would call it but without a socket or an HTTP parser: its lifespan
started and stopped (`started`), and requests made of a method, a path, headers and a body (`Caller`). Shared by
the in-process benchmarks (`read_inproc.py`, `batch_inproc.py`, `hop_count.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


@asynccontextmanager
async def started(app: Any) -> AsyncIterator[None]:
    """`app`'s lifespan started for the block and shut down after it."""
    lifespan: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await lifespan.put({"type": "lifespan.startup"})
    task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, lifespan.get, answers.put))
    await answers.get()
    try:
        yield
    finally:
        await lifespan.put({"type": "lifespan.shutdown"})
        await task


class Caller:
    """One request of `app`, made again on each `call()`; the last answer's status and body are kept."""

    def __init__(self, app: Any, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> None:
        self.app = app
        self.body = body
        self.sent: list[dict[str, Any]] = []
        given = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        if body:
            given.append((b"content-length", str(len(body)).encode()))
        self.scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000),
            "headers": [(b"host", b"127.0.0.1"), (b"accept", b"*/*"), *given],
        }  # fmt: skip

    async def _receive(self) -> dict[str, Any]:
        return {"type": "http.request", "body": self.body, "more_body": False}

    async def _send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def call(self) -> None:
        self.sent.clear()
        await self.app(self.scope, self._receive, self._send)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def answer(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])
