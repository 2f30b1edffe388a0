"""SQLite under several processes: a write waiting for another process's lock leaves the
event loop free, and transaction nesting belongs to the task that opened the transaction."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from backends.local.store import open_store
from backends.local.store.db import SqliteDatabase


async def test_a_write_waiting_for_another_process_lock_does_not_freeze_the_loop(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    store = await open_store(path)
    db = store.db
    assert isinstance(db, SqliteDatabase)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)  # "another process"
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO meta (key, value) VALUES ('held', '1')")
    release = threading.Timer(0.8, lambda: other.execute("COMMIT"))
    release.start()
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    try:
        started = time.monotonic()
        async with db.transaction():
            await db.execute("INSERT INTO meta (key, value) VALUES ('mine', '2')")
        await db.execute("INSERT INTO meta (key, value) VALUES ('autocommit', '3')")
        waited = time.monotonic() - started
    finally:
        tick.cancel()
        release.join()
        other.close()
    assert waited >= 0.5  # it did wait for the other writer ...
    assert db.busy_waits > 0
    assert max(gaps) < 0.25, f"the loop froze for {max(gaps):.2f} s"  # ... without blocking everyone else
    rows = await db.fetchall("SELECT key FROM meta WHERE key IN ('held', 'mine', 'autocommit') ORDER BY key")
    assert [r["key"] for r in rows] == ["autocommit", "held", "mine"]
    await store.aclose()


async def test_a_lock_never_released_fails_after_the_wait_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backends.local.store.db as dbmod

    monkeypatch.setattr(dbmod, "_SQLITE_BUSY_SECONDS", 0.3)
    path = str(tmp_path / "s.db")
    store = await open_store(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await store.db.execute("INSERT INTO meta (key, value) VALUES ('x', '1')")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            async with store.db.transaction():
                pass
        async with asyncio.timeout(1):  # nothing is left held in this process: reads go on
            assert await store.db.fetchone("SELECT value FROM meta WHERE key = 'x'") is None
    finally:
        other.execute("ROLLBACK")
        other.close()
    async with store.db.transaction():  # and the lock of this process was released
        await store.db.execute("INSERT INTO meta (key, value) VALUES ('x', '1')")
    await store.aclose()


async def test_transaction_nesting_is_per_task(tmp_path: Path) -> None:
    """Task B's transaction, opened while task A's is open, is B's own: A's rollback does not take B's row."""
    store = await open_store(str(tmp_path / "s.db"))
    db = store.db
    a_inside = asyncio.Event()

    async def a() -> None:
        with pytest.raises(RuntimeError):
            async with db.transaction():
                await db.execute("INSERT INTO meta (key, value) VALUES ('a', '1')")
                a_inside.set()
                await asyncio.sleep(0.05)  # B tries now
                raise RuntimeError("A fails")

    async def b() -> None:
        await a_inside.wait()
        async with db.transaction():
            await db.execute("INSERT INTO meta (key, value) VALUES ('b', '1')")
        assert await db.fetchone("SELECT value FROM meta WHERE key = 'b'") is not None

    async def reader() -> None:  # a statement outside any transaction from a third task waits for A's end
        await a_inside.wait()
        assert await db.fetchone("SELECT value FROM meta WHERE key = 'a'") is None

    await asyncio.gather(a(), b(), reader())
    keys = {r["key"] for r in await db.fetchall("SELECT key FROM meta WHERE key IN ('a', 'b')")}
    assert keys == {"b"}
    async with db.transaction():  # nesting inside one task still joins the outer transaction
        async with db.transaction():
            await db.execute("INSERT INTO meta (key, value) VALUES ('c', '1')")
        assert await db.fetchone("SELECT value FROM meta WHERE key = 'c'") is not None
    await store.aclose()
