"""Who holds a store's sealing key: every engine that loaded it (shared), or a rotation (exclusive).

A running process keeps the sealing key in memory and seals new secrets (TOTP set-ups, signing keys) with
it. Rotating the key under it would leave it sealing with the retired key, and those secrets unreadable
after a restart. So each engine holds a shared lock on the store for as long as it runs, and rotation
takes the lock exclusively: it is refused while any process (a server, an MCP server, a CLI call) holds
the store, and a process that starts meanwhile waits for the rotation to end, then loads the new key.

- SQLite: `flock` on `<store file>.lock` (0600). The kernel drops the lock when its process dies, so a
  killed server never blocks a rotation. Where `fcntl` does not exist (Windows) there is no lock: stop the
  servers before rotating (docs/auth.md says so).
- PostgreSQL: an advisory lock of the database, on a connection of its own held while the engine runs
  (PostgreSQL drops it with the connection). If that connection is lost, the lock is taken again; a
  rotation made meanwhile is found by the key's check value, and then this process's key is retired:
  sealing and opening refuse (a restart loads the new key) rather than sealing with the old one.
- In-memory stores are held by one process only: nothing to lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pluginsdk.errors import ConfigurationError

from .db import Database

__all__ = ["SealHold", "hold_store"]

log = logging.getLogger("pluginsdk.store")

_ADVISORY_KEY = int.from_bytes(hashlib.sha256(b"pluginsdk/seal-key-holders").digest()[:8], "big", signed=True)
_POLL = 0.05


class SealHold:
    """A held lock; `release()` gives it back (idempotent)."""

    def __init__(self, release: Callable[[], Awaitable[None]] | None = None) -> None:
        self._release = release
        self.key_check: str | None = None
        self.on_rotated: Callable[[], None] | None = None

    def guard(self, key_check: str, on_rotated: Callable[[], None]) -> None:
        """The check value of the key this process holds, and what to do if the lock was lost (a PostgreSQL
        connection dropped) and the key turns out to have been rotated meanwhile."""
        self.key_check, self.on_rotated = key_check, on_rotated

    async def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            await release()


async def hold_store(db: Database, *, exclusive: bool, wait: float) -> SealHold:
    """Take the store's lock (shared for an engine, exclusive for a rotation), trying for `wait` seconds;
    ConfigurationError when it cannot be had in time."""
    if db.dialect == "postgresql":
        return await _hold_postgres(db.url, exclusive, wait)
    if db.url == ":memory:":
        return SealHold()
    return await _hold_file(_lock_path(db.url), exclusive, wait)


def _lock_path(store_path: str) -> str:
    """`<store file>.lock`, beside the store and its `.key`."""
    return os.path.expanduser(store_path) + ".lock"


def _busy(exclusive: bool) -> ConfigurationError:
    if exclusive:
        return ConfigurationError(
            "The store is in use by a running pluginsdk process (a server, an MCP server or a CLI call), which "
            "keeps the sealing key in memory: stop them, then rotate. Nothing was changed.",
            key="storage.seal_key_file",
        )
    return ConfigurationError(
        "The store's sealing key is being rotated and the rotation did not end in time; try again.",
        key="storage.seal_key_file",
    )


async def _hold_file(path: str, exclusive: bool, wait: float) -> SealHold:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory file locks to share
        return SealHold()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, mode)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise _busy(exclusive) from None
            await asyncio.sleep(_POLL)

    async def release() -> None:
        os.close(fd)  # closing the descriptor drops its lock

    return SealHold(release)


async def _hold_postgres(url: str, exclusive: bool, wait: float) -> SealHold:
    import asyncpg  # type: ignore[import-untyped]

    url = "postgresql://" + url.split("://", 1)[1]
    function = "pg_try_advisory_lock" if exclusive else "pg_try_advisory_lock_shared"

    async def connect(deadline: float) -> Any:
        conn = await asyncio.wait_for(asyncpg.connect(url), 10)
        while not await conn.fetchval(f"SELECT {function}($1)", _ADVISORY_KEY):
            if time.monotonic() >= deadline:
                await conn.close()
                raise _busy(exclusive)
            await asyncio.sleep(_POLL)
        return conn

    state: dict[str, Any] = {"conn": await connect(time.monotonic() + wait)}
    hold = SealHold()

    async def keep() -> None:
        """Take the lock again after a lost connection; a key rotated meanwhile retires this process's key."""
        while True:
            await asyncio.sleep(1.0)
            if not state["conn"].is_closed():
                continue
            try:
                state["conn"] = conn = await connect(time.monotonic() + 30)
                current = await conn.fetchval("SELECT value FROM meta WHERE key = 'seal.key_check'")
            except (OSError, TimeoutError, ConfigurationError, asyncpg.PostgresError) as exc:
                log.warning("sealing-key lock not held (%s); retrying", type(exc).__name__)
                continue
            if hold.key_check is not None and current != hold.key_check and hold.on_rotated is not None:
                hold.on_rotated()
                return

    task = None if exclusive else asyncio.ensure_future(keep())

    async def release() -> None:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            await state["conn"].close()

    hold._release = release
    return hold
