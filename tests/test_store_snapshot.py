"""SQLite reads share one snapshot per event-loop step, and never longer (backends/local/store/db.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from backends.local.store.db import SqliteDatabase


def _pair(tmp_path: Path) -> tuple[SqliteDatabase, SqliteDatabase]:
    path = str(tmp_path / "s.db")
    return SqliteDatabase(path), SqliteDatabase(path)


async def _setup(db: SqliteDatabase) -> None:
    await db.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER)")
    await db.execute("INSERT INTO kv VALUES ('a', 1)")


async def _value(db: SqliteDatabase) -> int:
    row = await db.fetchone("SELECT v FROM kv WHERE k = 'a'")
    assert row is not None
    return int(row["v"])


async def test_a_change_by_another_connection_is_seen_at_the_next_step(tmp_path: Path) -> None:
    reader, writer = _pair(tmp_path)
    await _setup(writer)
    assert await _value(reader) == 1
    await writer.execute("UPDATE kv SET v = 2")  # commits at once (autocommit)
    await asyncio.sleep(0)  # the next step of the loop
    assert await _value(reader) == 2
    async with writer.transaction():
        await writer.execute("UPDATE kv SET v = 3")
    await asyncio.sleep(0)
    assert await _value(reader) == 3
    await reader.aclose()
    await writer.aclose()


async def test_writes_after_reads_in_the_same_step(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    await _setup(b)
    assert await _value(a) == 1  # a holds a snapshot now
    await b.execute("UPDATE kv SET v = 5")  # another connection moves on
    await a.execute("UPDATE kv SET v = v + 1")  # a's write ends its snapshot first: no stale-snapshot error
    assert await _value(a) == 6
    assert await _value(a) == 6
    async with a.transaction():  # and a transaction after a read in the same step
        assert await _value(a) == 6
        await a.execute("UPDATE kv SET v = v + 1")
    assert await _value(a) == 7
    await asyncio.sleep(0)
    assert await _value(b) == 7
    await a.aclose()
    await b.aclose()


def test_a_snapshot_never_survives_its_event_loop(tmp_path: Path) -> None:
    reader, writer = _pair(tmp_path)

    async def read() -> int:
        return await _value(reader)

    async def write(v: int) -> None:
        await writer.execute("UPDATE kv SET v = :v", {"v": v})

    asyncio.run(_setup(writer))
    first = asyncio.new_event_loop()

    async def read_then_stop() -> None:
        assert await read() == 1
        first.stop()  # the loop stops with the snapshot's end still queued, and is never run again

    task = first.create_task(read_then_stop())
    first.run_forever()
    assert task.done()
    first.close()
    asyncio.run(write(9))
    assert asyncio.run(read()) == 9
    asyncio.run(reader.aclose())
    asyncio.run(writer.aclose())
