"""The decision point reads the policy version like the authorizer: no statement per check while a
PostgreSQL listener is up, and a write in another process is seen (at_least_revision) all the same."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from tests.support.backends import base_config
from tests.support.postgres import fresh_database


def _count_version_reads(sdk: PluginSDK) -> list[int]:
    """Counts the store's version reads (the statement itself still runs)."""
    store = sdk.backend.engine.authz.store  # type: ignore[attr-defined]
    read, count = store.policy_version, [0]

    async def counted() -> int:
        count[0] += 1
        return int(await read())

    store.policy_version = counted
    return count


@pytest.fixture
async def postgres_config(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """Two SDKs opened on this configuration are two processes' engines on one PostgreSQL database."""
    async with fresh_database() as url:
        yield base_config(tmp_path, storage={"type": "postgresql", "url": url, "seal_key_file": f"{tmp_path}/seal.key"})


@pytest.mark.postgres
async def test_checks_read_no_version_while_listening_and_still_see_another_process_write(
    postgres_config: dict[str, Any],
) -> None:
    async with PluginSDK(config=postgres_config) as a, PluginSDK(config=postgres_config) as b:
        assert b.backend.engine.authz.watch.live  # type: ignore[attr-defined]
        first = await b.check_access("api", "GET", roles=["admin"], attributes={"route__path": "/roles"})
        reads = _count_version_reads(b)
        for _ in range(20):
            got = await b.check_access("api", "GET", roles=["admin"], attributes={"route__path": "/roles"})
            assert got.allowed and got.revision == first.revision
        assert reads == [0]  # neither the authorizer nor the decision point read the version
        role = await a.create_role(role_name="auditors", description="written by another process")
        assert role.revision is not None and role.revision > first.revision
        got = await b.check_access(
            "api", "GET", roles=["auditors"], attributes={"route__path": "/roles"}, at_least_revision=role.revision
        )
        assert got.revision >= role.revision and not got.allowed  # a new role grants nothing yet
        assert got.roles == ["auditors"]  # the role exists on the revision used (unknown roles are dropped)


async def test_on_sqlite_a_check_sees_another_process_write_at_once(tmp_path: Path) -> None:
    async with PluginSDK(config=base_config(tmp_path)) as a, PluginSDK(config=base_config(tmp_path)) as b:
        before = await b.check_access("asset", "GET", roles=["auditors"])
        role = await a.create_role(role_name="auditors", description="written by another process")
        got = await b.check_access("asset", "GET", roles=["auditors"])
        assert role.revision is not None and got.revision == role.revision > before.revision
        assert before.roles == [] and got.roles == ["auditors"]


async def test_on_sqlite_checks_read_no_version_until_a_commit_anywhere(tmp_path: Path) -> None:
    """The WAL index's header stands in for the version row until any connection commits; then the next check
    reads the version again and sees the write."""
    async with PluginSDK(config=base_config(tmp_path)) as a, PluginSDK(config=base_config(tmp_path)) as b:
        first = await b.check_access("asset", "GET", roles=["auditors"])
        reads = _count_version_reads(b)
        for _ in range(20):
            assert (await b.check_access("asset", "GET", roles=["auditors"])).revision == first.revision
        assert reads == [0]
        role = await a.create_role(role_name="auditors", description="written by another process")
        got = await b.check_access("asset", "GET", roles=["auditors"])
        assert reads == [1] and role.revision is not None and got.revision == role.revision > first.revision
        assert got.roles == ["auditors"]


async def test_on_sqlite_an_uncommitted_bump_elsewhere_is_not_seen_and_its_commit_is(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as b:
        first = await b.check_access("asset", "GET", roles=["auditors"])
        other = sqlite3.connect(config["storage"]["path"], isolation_level=None)  # another process's connection
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute(
                "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'auth.policy_version'"
            )
            assert (await b.check_access("asset", "GET", roles=["auditors"])).revision == first.revision
            other.execute("COMMIT")
            assert (await b.check_access("asset", "GET", roles=["auditors"])).revision == first.revision + 1
        finally:
            other.close()
