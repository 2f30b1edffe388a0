"""Reads kept under the SQLite store's change stamp (`Database.fetchall_kept`): no statement while no
connection on the host has committed, the new rows at once after any commit, a copy to each caller."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.local.store.db import SqliteDatabase
from pluginsdk import observe

_READ = "SELECT v FROM t WHERE k = :k"


@pytest.fixture
def statements() -> Iterator[list[str]]:
    seen: list[str] = []
    before = observe.statement
    observe.statement = lambda dialect, verb, seconds: seen.append(verb)
    try:
        yield seen
    finally:
        observe.statement = before


@pytest.fixture
async def stores(tmp_path: Path) -> Any:
    path = str(tmp_path / "kept.db")
    db = SqliteDatabase(path)
    await db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
    await db.execute("INSERT INTO t VALUES ('a', 'one')")
    other = sqlite3.connect(path, isolation_level=None)  # another process's connection
    try:
        yield db, other
    finally:
        other.close()
        await db.aclose()


async def test_a_kept_read_runs_no_statement_until_a_commit_anywhere(stores: Any, statements: list[str]) -> None:
    db, other = stores
    assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "one"}]
    assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "one"}]
    assert len(statements) == 1
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE t SET v = 'two' WHERE k = 'a'")
    assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "one"}]  # not committed: not seen by anyone
    other.execute("COMMIT")
    assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "two"}]
    await db.execute("UPDATE t SET v = 'three' WHERE k = 'a'")  # this connection's own autocommit write
    assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "three"}]


async def test_a_kept_read_hands_out_copies_and_is_not_kept_inside_a_transaction(stores: Any) -> None:
    db, _ = stores
    rows = await db.fetchall_kept(_READ, {"k": "a"})
    rows[0]["v"] = "changed by the caller"
    assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "one"}]
    async with db.transaction():
        await db.execute("UPDATE t SET v = 'uncommitted' WHERE k = 'a'")
        assert db.change_stamp() is None
        assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "uncommitted"}]  # its own write, read
    assert await db.fetchall_kept(_READ, {"k": "a"}) == [{"v": "uncommitted"}]


async def test_an_in_memory_store_has_no_stamp(tmp_path: Path) -> None:
    db = SqliteDatabase(":memory:")
    try:
        assert db.change_stamp() is None
    finally:
        await db.aclose()
