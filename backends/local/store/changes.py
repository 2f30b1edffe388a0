"""Which requests changed, told to every server on the store: a progress stream held by one server shows a
change another server wrote within a second.

PostgreSQL: triggers on `requests` and `machines` (schema migration 16) `NOTIFY` the channel
`pluginsdk_requests` with the request id on every insert and update, whoever writes; each server LISTENs on
one connection of its own, opened when its first watch begins. SQLite has no notifications: a watch is a
pause of `POLL` seconds and the watcher reads the store again (polling). A PostgreSQL watch also rereads
after `FALLBACK` seconds, so a notification lost with a dropped listener connection delays a change by at
most that (the listener reconnects at the next watch).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from .db import Database

__all__ = ["CHANNEL", "ChangeFeed", "Watch"]

log = logging.getLogger("pluginsdk.store")

CHANNEL = "pluginsdk_requests"
POLL = 0.25
"""Seconds between two reads of a watched request where the store sends no notifications (SQLite)."""
FALLBACK = 1.0
"""Seconds between two reads of a watched request when notifications arrive (PostgreSQL)."""


class Watch:
    """One watched request: `wait(seconds)` returns when it changed since the last wait, or after `seconds`;
    `poll` is the longest pause its watcher should take."""

    def __init__(self, feed: ChangeFeed | None) -> None:
        self._changed = asyncio.Event()
        self._feed = feed
        self.poll = FALLBACK if feed is not None and feed.live else POLL

    def notify(self) -> None:
        """The request changed (the feed's listener calls this)."""
        self._changed.set()

    async def wait(self, seconds: float) -> None:
        if self._feed is None or not self._feed.live:
            await asyncio.sleep(seconds)
            return
        with suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), seconds)
        self._changed.clear()


class ChangeFeed:
    """The store's notifications of changed requests (PostgreSQL), one listener connection per process."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._watches: dict[str, set[Watch]] = {}
        self._conn: Any = None
        self._opening = asyncio.Lock()

    @property
    def live(self) -> bool:
        """Whether notifications arrive now (PostgreSQL, listener connected)."""
        return self._conn is not None and not self._conn.is_closed()

    @asynccontextmanager
    async def watch(self, request_id: str) -> AsyncIterator[Watch]:
        """Watch `request_id` while the block runs: a change is remembered until the next `wait`."""
        await self._listen()
        watch = Watch(self)
        self._watches.setdefault(request_id, set()).add(watch)
        try:
            yield watch
        finally:
            watchers = self._watches.get(request_id, set())
            watchers.discard(watch)
            if not watchers:
                self._watches.pop(request_id, None)

    async def _listen(self) -> None:
        if self._db.dialect != "postgresql" or self.live:
            return
        async with self._opening:
            if self.live:
                return
            import asyncpg  # type: ignore[import-untyped]

            try:
                conn = await asyncpg.connect("postgresql://" + self._db.url.split("://", 1)[1], timeout=10)
                await conn.add_listener(CHANNEL, self._notified)
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("change notifications unavailable, watches poll the store: %s", exc)
                return
            self._conn = conn

    def _notified(self, _conn: Any, _pid: int, _channel: str, request_id: str) -> None:
        for watch in self._watches.get(request_id, ()):
            watch.notify()

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            try:
                await asyncio.wait_for(conn.close(), 5)
            except (OSError, TimeoutError):
                conn.terminate()
