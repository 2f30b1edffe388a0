"""Policy changes everywhere at once without a read per decision, on PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from tests.support.backends import base_config
from tests.support.postgres import fresh_database


def service(sdk: PluginSDK) -> Any:
    return sdk.backend.engine.authz  # type: ignore[attr-defined]


@pytest.mark.postgres
async def test_a_change_in_one_process_reaches_the_other_without_a_read_per_decision(tmp_path: Path) -> None:
    async with fresh_database() as url:
        config = base_config(
            tmp_path, storage={"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")}
        )
        async with PluginSDK(config=config) as a, PluginSDK(config=config) as b:
            sa, sb = service(a), service(b)
            assert sa.watch.live and sb.watch.live
            await b.list_templates()
            reads = sb.watch.reads
            for _ in range(50):  # decisions while nothing changes: no version read
                await b.list_templates()
            assert sb.watch.reads == reads
            old = (await sb.snapshot()).version
            await a.create_role(role_name="auditors", description="new role")  # a policy change in A
            deadline = time.monotonic() + 2
            while (await sb.snapshot()).version == old:  # B's next decisions see it, without restarting
                assert time.monotonic() < deadline, "B never saw A's change"
                await asyncio.sleep(0.005)
            assert (await sb.snapshot()).version == await sb.store.policy_version()
            assert "auditors" in (await sb.snapshot()).roles
            # the writer itself never keeps a version read before its own change committed
            assert (await sa.snapshot()).version == await sa.store.policy_version()
            # the listening link drops: every decision reads the version again (fail safe), until it is back
            await sb.watch._conn.close()
            reads = sb.watch.reads
            await b.list_templates()
            await b.list_templates()
            assert sb.watch.reads >= reads + 2


async def test_on_sqlite_every_decision_reads_the_version(tmp_path: Path) -> None:
    async with PluginSDK(config=base_config(tmp_path)) as a, PluginSDK(config=base_config(tmp_path)) as b:
        sb = service(b)
        assert not sb.watch.live
        await b.list_templates()
        await a.create_role(role_name="auditors", description="new role")
        assert "auditors" in (await sb.snapshot()).roles  # the very next decision
