"""A verified API key is kept while the SQLite store's change stamp holds: no statement per call until any
process commits, and a key revoked through another process fails on the very next call all the same."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pluginsdk import AuthenticationError, PluginSDK
from tests.auth.conftest import authenticate
from tests.support.backends import base_config


def _count_key_reads(sdk: PluginSDK) -> list[int]:
    store = sdk.backend.engine.authz.store  # type: ignore[attr-defined]
    read, count = store.api_key_by_hash, [0]

    async def counted(digest: str) -> object:
        count[0] += 1
        return await read(digest)

    store.api_key_by_hash = counted
    return count


async def test_a_key_revoked_through_another_process_fails_on_the_next_call(tmp_path: Path) -> None:
    async with PluginSDK(config=base_config(tmp_path)) as admin, PluginSDK(config=base_config(tmp_path)) as server:
        key = await admin.create_api_key(api_key_name="kept", user_id="administrator", description="verified once")
        reads = _count_key_reads(server)
        first = await authenticate(server, key.api_key)
        for _ in range(5):
            assert await authenticate(server, key.api_key) == first
        assert reads == [1]  # nothing committed since: the key verified once
        await admin.update_api_key(key.api_key_id, is_active="false")
        with pytest.raises(AuthenticationError):
            await authenticate(server, key.api_key)
        await admin.update_api_key(key.api_key_id, is_active="true")
        assert (await authenticate(server, key.api_key)).api_key_id == key.api_key_id
        await admin.delete_api_key(key.api_key_id)
        with pytest.raises(AuthenticationError):
            await authenticate(server, key.api_key)


async def test_a_kept_key_carries_the_policy_version_of_its_read_and_a_policy_write_moves_it(tmp_path: Path) -> None:
    async with PluginSDK(config=base_config(tmp_path)) as admin, PluginSDK(config=base_config(tmp_path)) as server:
        key = await admin.create_api_key(api_key_name="kept", user_id="administrator", description="versioned")
        before = await authenticate(server, key.api_key)
        role = await admin.create_role(role_name="auditors", description="a policy write elsewhere")
        after = await authenticate(server, key.api_key)
        assert before.policy_version is not None and after.policy_version == role.revision > before.policy_version


async def test_a_kept_key_still_expires_on_time(tmp_path: Path) -> None:
    async with PluginSDK(config=base_config(tmp_path)) as sdk:
        soon = (datetime.now(UTC) + timedelta(seconds=0.5)).isoformat()
        key = await sdk.create_api_key(
            api_key_name="brief", user_id="administrator", description="short-lived", expires_at=soon
        )
        await authenticate(sdk, key.api_key)
        await asyncio.sleep(0.6)  # no commit in between: the kept entry itself must expire
        with pytest.raises(AuthenticationError):
            await authenticate(sdk, key.api_key)


async def test_a_raw_commit_by_another_connection_drops_kept_keys(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        key = await sdk.create_api_key(api_key_name="raw", user_id="administrator", description="short-lived")
        await authenticate(sdk, key.api_key)
        other = sqlite3.connect(config["storage"]["path"], isolation_level=None)  # another process's connection
        try:
            other.execute("DELETE FROM auth_api_keys WHERE api_key_id = ?", (key.api_key_id,))
        finally:
            other.close()
        with pytest.raises(AuthenticationError):
            await authenticate(sdk, key.api_key)
