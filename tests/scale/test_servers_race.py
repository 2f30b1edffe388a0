"""N servers on one PostgreSQL database racing the same creates: every loser's answer
is the 409 envelope, never a 500, and what is stored is whole."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from pathlib import Path

import pytest

from pluginsdk import PluginSDK
from tests.support.backends import base_config
from tests.support.postgres import fresh_database
from tests.support.remote import admin_key, running_server
from tests.test_store_races import assert_one_winner, assert_whole, creations, outcome, prepare


@pytest.mark.postgres
async def test_three_servers_racing_the_same_creates(tmp_path: Path) -> None:
    async with fresh_database() as url:
        config = base_config(
            tmp_path, storage={"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")}
        )
        async with PluginSDK(config=config) as sdk:
            await prepare(sdk)
        key = await admin_key(config)
        with ExitStack() as stack:
            urls = [stack.enter_context(running_server(config)) for _ in range(3)]  # each its own engine
            sdks = [PluginSDK(backend="remote", api_url=u, api_key=key, config=config) for u in urls]
            for s in sdks:
                await s.__aenter__()
            try:
                rounds = 3
                results: list[dict[str, str]] = [{} for _ in sdks]
                for n in range(rounds):
                    barrier = asyncio.Barrier(len(sdks) * 6)

                    async def one(into: dict[str, str], k: str, call: object, b: asyncio.Barrier = barrier) -> None:
                        await b.wait()
                        into[k] = await outcome(call)  # type: ignore[arg-type]

                    await asyncio.gather(
                        *(
                            one(results[i], f"{k}-{n}", c)
                            for i, s in enumerate(sdks)
                            for k, c in creations(s, n).items()
                        )
                    )
                assert_one_winner(results, rounds=rounds)
                await assert_whole(sdks[0], rounds=rounds)
            finally:
                for s in sdks:
                    await s.__aexit__(None, None, None)
