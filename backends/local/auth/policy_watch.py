"""The policy version without a statement per decision: PostgreSQL LISTEN/NOTIFY, SQLite's WAL index.

Every write that bumps the policy version also sends `NOTIFY pluginsdk_policy` in its transaction, which
PostgreSQL delivers to every listening process when it commits. A process that listens keeps the version
it last read and reads it again only after a notification (or while its listening connection is down), so
a decision costs no statement. Without a live listener (a lost connection, asyncpg missing) every decision
reads the version row.

On SQLite the store offers a change stamp (`Database.change_stamp`: the WAL index's header, which SQLite
rewrites at every commit by any process on the host, and only at a commit): the version read is kept with
the stamp taken before it, and used again while the stamp is unchanged. Any commit — of any table, by any
process — changes the stamp, so the next decision reads the version again; a stamp taken before a read
and a commit between them only costs one more read. Inside a transaction there is no stamp (that
connection sees its own uncommitted writes), so the version is read.

The window: another process sees a change once its listener has received the notification, which
PostgreSQL sends at commit — before the writer's caller has its answer. A notification arriving while a
read is in flight discards that read's value (generation counter), so a stale version is never kept. A
bump made by this process stops the caching here until its own notification arrives (at most 5 s), so
this process never keeps the version it read between its own write and that write's commit. On SQLite the
window is nil: a commit's header is written before the commit returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["CHANNEL", "PolicyWatch"]

CHANNEL = "pluginsdk_policy"
log = logging.getLogger("pluginsdk.auth.policy")


class PolicyWatch:
    """Caches the policy version while a LISTEN connection is up, or while the store's change stamp holds; see
    the module docstring."""

    def __init__(self, stamp: Callable[[], bytes | None] | None = None) -> None:
        self._stamp = stamp
        """The store's change stamp (SQLite), or None."""
        self._stamped: tuple[bytes, int] | None = None
        """(stamp, the version read right after it was taken)."""
        self._known: int | None = None
        self._generation = 0
        self._conn: Any = None
        self._url: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._paused_until = 0.0
        self.reads = 0
        """Version reads made (observability, tests, bench)."""

    @property
    def live(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def start(self, url: str) -> None:
        """Listen on `url` (a postgresql:// URL); keeps reconnecting in the background when the link drops."""
        self._url = url.replace("postgresql+asyncpg://", "postgresql://", 1)
        await self._connect()
        self._task = asyncio.ensure_future(self._keep())

    async def _connect(self) -> None:
        try:
            import asyncpg  # type: ignore[import-untyped]
        except ImportError:  # pragma: no cover - the postgres extra brings it
            return
        try:
            conn = await asyncio.wait_for(asyncpg.connect(self._url), 10)
            await conn.add_listener(CHANNEL, self._notified)
        except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
            log.warning(
                "policy change notifications unavailable (%s); reading the version per decision", type(exc).__name__
            )
            return
        self.invalidate()  # anything may have changed while nobody listened
        self._conn = conn

    async def _keep(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            if not self.live:
                self._conn = None
                self.invalidate()
                await self._connect()

    def _notified(self, *_: object) -> None:
        self._paused_until = 0.0
        self.invalidate()

    def invalidate(self) -> None:
        self._generation += 1
        self._known = None
        self._stamped = None

    def bumped_here(self) -> None:
        """This process bumped the version (not yet committed): read per decision until the notification."""
        self._paused_until = time.monotonic() + 5.0
        self.invalidate()

    def kept(self) -> int | None:
        """The version when it is known without a read (a live listener's, or the one read under the current
        stamp), else None: `version` without a coroutine, for the per-decision path."""
        known = self._known
        if known is not None and self.live:
            return known
        stamped = self._stamped
        if stamped is not None and self._stamp is not None and stamped[0] == self._stamp():
            return stamped[1]
        return None

    async def version(self, read: Callable[[], Awaitable[int]]) -> int:
        known = self._known
        if known is not None and self.live:
            return known
        stamp = self._stamp() if self._stamp is not None else None
        stamped = self._stamped
        if stamp is not None and stamped is not None and stamped[0] == stamp:
            return stamped[1]
        generation = self._generation
        self.reads += 1
        version = await read()
        if generation != self._generation:
            return version
        if self.live and time.monotonic() >= self._paused_until:
            self._known = version
        elif stamp is not None:
            self._stamped = (stamp, version)
        return version

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
        self._conn = None
