"""The same engine on PostgreSQL (127.0.0.1:5432, trust auth); skipped where none is reachable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.local.store.db import Database, open_database
from pluginsdk import AlreadyExistsError, PluginSDK
from pluginsdk.models import RequestStatus
from tests.support.backends import base_config
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.postgres


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    async with fresh_database() as url:
        yield url


async def test_provisioning_cycle_on_postgres(pg_url: str, tmp_path: Path) -> None:
    config = base_config(
        tmp_path, storage={"type": "postgresql", "url": pg_url, "seal_key_file": str(tmp_path / "seal.key")}
    )
    async with PluginSDK(config=config) as sdk:
        assert (await sdk.get_system_status()).storage == "postgresql"
        await sdk.create_template(template_id="web", image_id="ami-1", tags={"a": "b"})
        with pytest.raises(AlreadyExistsError):
            await sdk.create_template(template_id="web", image_id="ami-1")
        req = await sdk.create_request("web", 2, wait=True)
        assert req.status == "completed" and len(req.machines) == 2
        ret = await sdk.create_return_request([m.machine_id for m in req.machines])
        for _ in range(100):
            if (await sdk.get_request(ret.request_id or "")).status.terminal:
                break
            await asyncio.sleep(0.05)
        assert (await sdk.get_request(ret.request_id or "")).status is RequestStatus.COMPLETED
        assert (await sdk.list_requests()).total_count == 2
        row = await sdk.backend.engine.store.db.fetchone("SELECT value FROM meta WHERE key = 'auth.secrets_key'")  # type: ignore[attr-defined]
        assert row is None  # the sealing key is in the owner-only key file, not in the database
    assert oct((tmp_path / "seal.key").stat().st_mode & 0o777) == "0o600"
    # a second engine on the same database sees the same state (schema already migrated)
    async with PluginSDK(config=config) as again:
        assert (await again.get_template("web")).template.tags == {"a": "b"}


@pytest.fixture
async def db(pg_url: str) -> AsyncIterator[Database]:
    """The store's database layer on a fresh database (what every store module runs its SQL through)."""
    db = open_database(pg_url)
    try:
        yield db
    finally:
        await db.aclose()


async def test_statements_reuse_pooled_connections_up_to_the_pool_size(db: Database) -> None:
    pids = {(await db.fetchone("SELECT pg_backend_pid() AS pid") or {})["pid"] for _ in range(30)}
    assert len(pids) == 1  # one after another: one connection, not one per statement
    rows = await asyncio.gather(*(db.fetchone("SELECT pg_backend_pid() AS pid, pg_sleep(0.2) AS s") for _ in range(45)))
    assert 1 < len({r["pid"] for r in rows if r}) <= 20  # concurrent: several, never more than the pool


async def test_a_statement_waits_for_a_free_connection_but_not_forever(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backends.local.store import db as db_module
    from backends.local.store.conflicts import StoreFailure

    monkeypatch.setattr(db_module, "_SLOT_WAIT", 0.5)
    held = asyncio.gather(*(db.fetchone("SELECT pg_sleep(2) AS s") for _ in range(20)))  # every connection busy
    await asyncio.sleep(0.3)
    with pytest.raises(StoreFailure, match="no connection free"):
        await db.fetchone("SELECT 1 AS one")
    await held
    assert await db.fetchone("SELECT 1 AS one") == {"one": 1}  # freed slots serve again


async def test_a_unique_violation_is_409_and_leaves_the_connection_usable(db: Database) -> None:
    await db.execute("CREATE TABLE templates (template_id TEXT PRIMARY KEY)")
    assert await db.execute("INSERT INTO templates (template_id) VALUES (:id)", {"id": "web"}) == 1
    pid = (await db.fetchone("SELECT pg_backend_pid() AS pid") or {})["pid"]
    with pytest.raises(AlreadyExistsError):
        await db.execute("INSERT INTO templates (template_id) VALUES (:id)", {"id": "web"})
    with pytest.raises(AlreadyExistsError):
        await db.executemany("INSERT INTO templates (template_id) VALUES (:id)", [{"id": "a"}, {"id": "web"}])
    assert await db.fetchall("SELECT template_id FROM templates") == [{"template_id": "web"}]  # all or none
    assert (await db.fetchone("SELECT pg_backend_pid() AS pid") or {})["pid"] == pid


async def test_a_task_cancelled_mid_transaction_releases_its_locks(db: Database) -> None:
    await db.execute("CREATE TABLE claims (id TEXT PRIMARY KEY)")
    await db.execute("INSERT INTO claims (id) VALUES ('r1')")
    locked = asyncio.Event()

    async def hold() -> None:
        async with db.transaction():
            await db.fetchone("SELECT id FROM claims WHERE id = 'r1' FOR UPDATE")
            locked.set()
            await db.fetchone("SELECT pg_sleep(30) AS s")  # cancelled while this query runs

    holder = asyncio.create_task(hold())
    await asyncio.wait_for(locked.wait(), 10)
    holder.cancel()
    with pytest.raises(asyncio.CancelledError):
        await holder
    async with asyncio.timeout(10), db.transaction():  # the holder's connection is gone, its lock with it
        assert await db.fetchone("SELECT id FROM claims WHERE id = 'r1' FOR UPDATE") == {"id": "r1"}
    assert await db.fetchone("SELECT count(*) AS n FROM claims") == {"n": 1}  # the pool still serves
