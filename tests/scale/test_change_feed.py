"""The store's change notifications (backends/local/store/changes.py): on PostgreSQL a watch on one engine wakes
as soon as another engine on the database writes the request or its machines; on SQLite a watch is a pause."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from pluginsdk import PluginSDK


@pytest.mark.postgres
@pytest.mark.parametrize("any_store", ["postgresql"], indirect=True)
async def test_a_write_by_another_engine_wakes_a_watch_at_once(any_store: dict[str, Any]) -> None:
    slow = {**any_store, "provider": {**any_store["provider"], "local": {"boot_delay": 120, "seed": 7}}}
    async with PluginSDK(config=slow) as writer, PluginSDK(config=slow) as reader:
        await writer.create_template(template_id="t", image_id="ami-1")
        made = await writer.create_request("t", 1)
        request_id = made.request_id or ""
        backend: Any = reader._backend  # the served backend's watch, as the console uses it
        async with backend.watch_request(request_id) as watch:
            assert watch.poll == 1.0  # notifications arrive: the watcher rereads each second only besides
            await watch.wait(0.05)  # whatever the launch wrote is taken
            other = backend.watch_request("req-other")
            async with other as unrelated:
                waited = asyncio.create_task(unrelated.wait(30))
                started = time.monotonic()
                await writer.cancel_request(request_id, force=True)
                await watch.wait(30)
                assert time.monotonic() - started < 2  # woken, not timed out
                assert not waited.done()  # a change to one request wakes only its watches
                waited.cancel()


async def test_on_sqlite_a_watch_is_a_pause(tmp_path: Any) -> None:
    from tests.support.backends import base_config

    async with PluginSDK(config=base_config(tmp_path)) as sdk:
        backend: Any = sdk._backend
        async with backend.watch_request("req-x") as watch:
            assert watch.poll == 0.25
            started = time.monotonic()
            await watch.wait(0.1)
            assert time.monotonic() - started >= 0.1
