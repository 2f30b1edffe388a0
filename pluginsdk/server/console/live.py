"""Answers that stream: a request's progress as server-sent events, and the audit log as JSON lines.

A progress stream follows the request with the one wait loop (`pluginsdk.waiting.follow`), reading it as the
caller (the same operations the page uses) and sending the fragment when it changed. Between readings it
waits on the store's change notifications (PostgreSQL `LISTEN/NOTIFY`: a change any server writes wakes it at
once, a reread each second besides) or, on SQLite, reads again every `TICK` seconds — so a state change
shows in the page within a second whichever server wrote it. It ends when the request is final, when the
session ends (sign-out, expiry), or after `STREAM_SECONDS` (the browser reconnects, authenticating again). The
page falls back to polling the fragment where the stream fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.responses import StreamingResponse

from ...errors import AuthenticationError
from ._html import Safe
from ._web import COOKIE

if TYPE_CHECKING:
    from ._web import Ctx

__all__ = ["STREAM_SECONDS", "TICK", "audit_export", "progress_events"]

TICK = 0.25
"""Longest pause between two reads of a streamed request where the store sends no notifications."""
STREAM_SECONDS = 300.0
"""A progress stream ends after this long; the browser's EventSource opens another."""
REAUTH_SECONDS = 2.0
"""How often a stream re-authenticates the session's credential."""
HEARTBEAT_SECONDS = 15.0
"""A comment line this often keeps proxies from closing a quiet stream."""
_AUDIT_PAGE = 1000
_STREAM_HEADERS = {"cache-control": "no-store", "x-accel-buffering": "no"}


async def _authenticates(ctx: Ctx) -> bool:
    """The session's credential still authenticates (a revoked key or an ended token stop the stream)."""
    try:
        await ctx.console.backend.authenticate(ctx.session.authorization)
    except AuthenticationError:
        return False
    return True


def _event(name: str, data: str) -> bytes:
    """One server-sent event; each line of `data` on a `data:` line of its own."""
    lines = "".join(f"data: {line}\n" for line in data.replace("\r", "").split("\n"))
    return f"event: {name}\n{lines}\n".encode()


async def progress_events(ctx: Ctx, request_id: str, fragment: Callable[[], Awaitable[Safe]]) -> StreamingResponse:
    """`text/event-stream` of the request's progress fragment: a `progress` event at each change, `final` last.

    The first read happens before the answer starts, so a refusal (403, 404) is the refusal page."""
    first = await fragment()
    cookie = ctx.request.cookies.get(COOKIE)

    async def events() -> AsyncIterator[bytes]:
        yield b"retry: 1000\n\n"
        yield _event("final" if "data-final" in str(first) else "progress", str(first))
        if "data-final" in str(first):
            return
        sent: asyncio.Queue[bytes | None] = asyncio.Queue()
        following = asyncio.create_task(
            _follow(ctx, request_id, fragment=fragment, shown=str(first), cookie=cookie, sent=sent)
        )
        try:
            while (chunk := await sent.get()) is not None:
                yield chunk
            await following  # what ended the follow, other than the session's end, is raised here
        finally:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)

    return StreamingResponse(events(), media_type="text/event-stream", headers=_STREAM_HEADERS)


class _Ended(Exception):
    """The stream's session ended (sign-out, expiry, a revoked credential)."""


async def _follow(
    ctx: Ctx,
    request_id: str,
    *,
    fragment: Callable[[], Awaitable[Safe]],
    shown: str,
    cookie: str | None,
    sent: asyncio.Queue[bytes | None],
) -> None:
    """Follow the request with the one wait loop (`waiting.follow`), reading it as the caller; each reading
    that changed the fragment goes to `sent` as an event, then None when the stream ends. Between readings it
    waits on the store's change notifications where the backend has them (`watch_request`: any server's
    write wakes it), else for `TICK` seconds."""
    from ... import waiting

    started = beat = checked = time.monotonic()

    async def read(request: Any) -> Any:
        nonlocal shown, beat, checked
        if not await ctx.console.sessions.alive(cookie):
            raise _Ended  # signed out on any server, or expired (an open stream is no activity: it still goes idle)
        if time.monotonic() - checked > REAUTH_SECONDS:
            checked = time.monotonic()
            if not await _authenticates(ctx):
                raise _Ended
        found = await ctx.call("get_request", {"request_id": request_id})
        now = str(await fragment())
        if now != shown:
            shown = now
            await sent.put(_event("final" if "data-final" in now else "progress", now))
        elif time.monotonic() - beat > HEARTBEAT_SECONDS:
            beat = time.monotonic()
            await sent.put(b": still here\n\n")
        return found

    try:
        watching = getattr(ctx.console.backend, "watch_request", None)
        async with watching(request_id) if watching is not None else _polling() as watch:
            first = await read(None)  # a reading like every next one: a change since the first fragment is sent
            await waiting.follow(read, first, seconds=STREAM_SECONDS, poll=watch.poll, start=started, wait=watch.wait)
    except _Ended:
        pass
    finally:
        await sent.put(None)


class _Polled:
    """A watch of a backend without change notifications: each wait is a pause of up to `TICK` seconds."""

    poll = TICK

    async def wait(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@asynccontextmanager
async def _polling() -> AsyncIterator[_Polled]:
    yield _Polled()


async def audit_export(ctx: Ctx, filters: dict[str, Any]) -> StreamingResponse:
    """Every audit record the filters select, oldest first, as JSON lines (`application/x-ndjson`).

    Each page is `list_audit_records` run as the caller (so it is authorized as the listing is); the first
    before the answer starts, so a refusal is the refusal page rather than a cut download."""
    first = await ctx.call("list_audit_records", {**filters, "page_size": _AUDIT_PAGE, "jsonl": True})

    async def lines() -> AsyncIterator[bytes]:
        page = first
        while True:
            if page.jsonl:
                yield page.jsonl.encode() + (b"" if page.jsonl.endswith("\n") else b"\n")
            if not page.next_token or not page.records:
                return
            data = {**filters, "page_size": _AUDIT_PAGE, "jsonl": True, "starting_token": page.next_token}
            page = await ctx.call("list_audit_records", data)

    headers = {**_STREAM_HEADERS, "content-disposition": 'attachment; filename="audit.jsonl"'}
    return StreamingResponse(lines(), media_type="application/x-ndjson", headers=headers)
