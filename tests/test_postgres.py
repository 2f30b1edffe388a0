"""The same engine on PostgreSQL (127.0.0.1:5432, trust auth); skipped where none is reachable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

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
        row = await sdk.backend.engine.db.db.fetchone("SELECT value FROM meta WHERE key = 'auth.secrets_key'")  # type: ignore[attr-defined]
        assert row is None  # the sealing key is in the owner-only key file, not in the database
    assert oct((tmp_path / "seal.key").stat().st_mode & 0o777) == "0o600"
    # a second engine on the same database sees the same state (schema already migrated)
    async with PluginSDK(config=config) as again:
        assert (await again.get_template("web")).template.tags == {"a": "b"}
