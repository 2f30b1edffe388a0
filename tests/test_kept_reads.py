"""Reads kept under the SQLite store's change stamp (`Database.read_kept`): no statement and no parse while no
connection on the host has committed, the new rows at once after any commit; the kept requests and machines
are handed to each caller as its own copy (`pluginsdk/models/detached.py`), which it may change freely."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.local.store.db import Row, SqliteDatabase
from pluginsdk import PluginSDK, observe
from pluginsdk.models import Machine, MachineStatus, Request
from pluginsdk.models.detached import detached

_READ = "SELECT v FROM t WHERE k = :k"
_parsed: list[int] = []


def _values(rows: list[Row]) -> tuple[str, ...]:
    _parsed.append(len(rows))
    return tuple(r["v"] for r in rows)


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
    _parsed.clear()
    assert await db.read_kept(_READ, {"k": "a"}, _values) == ("one",)
    assert await db.read_kept(_READ, {"k": "a"}, _values) == ("one",)
    assert len(statements) == 1 and len(_parsed) == 1  # read and parsed once
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE t SET v = 'two' WHERE k = 'a'")
    assert await db.read_kept(_READ, {"k": "a"}, _values) == ("one",)  # not committed: not seen by anyone
    other.execute("COMMIT")
    assert await db.read_kept(_READ, {"k": "a"}, _values) == ("two",)
    await db.execute("UPDATE t SET v = 'three' WHERE k = 'a'")  # this connection's own autocommit write
    assert await db.read_kept(_READ, {"k": "a"}, _values) == ("three",)


async def test_a_kept_read_is_not_kept_inside_a_transaction(stores: Any, statements: list[str]) -> None:
    db, _ = stores
    async with db.transaction():
        await db.execute("UPDATE t SET v = 'uncommitted' WHERE k = 'a'")
        assert db.change_stamp() is None
        assert await db.read_kept(_READ, {"k": "a"}, _values) == ("uncommitted",)  # its own write, read
        assert await db.read_kept(_READ, {"k": "a"}, _values) == ("uncommitted",)
    assert statements.count("SELECT") == 2
    assert await db.read_kept(_READ, {"k": "a"}, _values) == ("uncommitted",)


async def test_an_in_memory_store_has_no_stamp(tmp_path: Path) -> None:
    db = SqliteDatabase(":memory:")
    try:
        assert db.change_stamp() is None
    finally:
        await db.aclose()


def test_a_detached_copy_shares_nothing_a_caller_can_change() -> None:
    machine = Machine(machine_id="i-1", request_id="req-1", template_id="web")
    kept = Request(
        request_id="req-1", tags={"team": "a"}, machine_ids=["i-1"], machines=[machine],
        provider_data={"fleet": {"ids": ["f-1"]}, "n": 1},
    )  # fmt: skip
    before = kept.model_dump()
    copy = detached(kept)
    assert copy == kept and copy is not kept
    assert copy.model_dump() == kept.model_dump() and copy.model_fields_set == kept.model_fields_set
    copy.status = "failed"  # type: ignore[assignment]
    copy.tags["team"] = "b"
    copy.machine_ids.append("i-2")
    copy.machines[0].status = MachineStatus.FAILED
    copy.provider_data["fleet"]["ids"].append("f-2")
    copy.model_fields_set.add("message")
    assert kept.model_dump() == before
    assert machine.status is MachineStatus.PENDING and "message" not in kept.model_fields_set


@pytest.fixture
async def web(sdk: PluginSDK) -> PluginSDK:
    await sdk.create_template(template_id="web", image_id="ami-1", instance_type="t3.small")
    return sdk


async def test_a_caller_changing_the_request_it_read_changes_no_other_read(web: PluginSDK) -> None:
    rid = str((await web.create_request("web", 2, wait=True)).id)
    first = await web.get_request(rid, long=True)
    assert len(first.machines) == 2
    first.message = "changed by the caller"
    first.tags["x"] = "y"
    first.machine_ids.clear()
    first.provider_data["x"] = ["y"]
    first.machines[0].status = MachineStatus.FAILED
    first.machines.pop()
    again = await web.get_request(rid, long=True)
    assert again.message != "changed by the caller" and again.tags == {} and "x" not in again.provider_data
    assert len(again.machine_ids) == 2 and [m.status for m in again.machines] == [MachineStatus.RUNNING] * 2
    assert again is not first


async def test_a_request_committed_by_another_connection_is_read_at_once(web: PluginSDK, tmp_path: Path) -> None:
    rid = str((await web.create_request("web", 1, wait=True)).id)
    assert (await web.get_request(rid, long=True)).message != "written elsewhere"
    other = sqlite3.connect(str(tmp_path / "store.db"), isolation_level=None)  # another process's connection
    try:
        other.execute(
            "UPDATE requests SET data = json_set(data, '$.message', 'written elsewhere') WHERE request_id = ?",
            (rid,),
        )
        other.execute(
            "UPDATE machines SET data = json_set(data, '$.status_reason', 'noted elsewhere') WHERE request_id = ?",
            (rid,),
        )
    finally:
        other.close()
    read = await web.get_request(rid, long=True)
    assert read.message == "written elsewhere" and read.machines[0].status_reason == "noted elsewhere"


async def test_a_read_changed_by_its_caller_reads_again_unchanged_on_either_store(any_store: dict[str, Any]) -> None:
    """SQLite keeps the validated request (a copy to each caller); PostgreSQL reads and validates it each time:
    either way the next read is the stored one."""
    async with PluginSDK(config=any_store) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        rid = str((await sdk.create_request("web", 1, wait=True)).id)
        first = await sdk.get_request(rid, long=True)
        first.tags["x"] = "y"
        first.machines[0].status = MachineStatus.FAILED
        again = await sdk.get_request(rid, long=True)
        assert again.tags == {} and again.machines[0].status is MachineStatus.RUNNING
