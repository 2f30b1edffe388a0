"""Races end in 409: callers creating the same template, role, user-role, API key name,
constraint or request id at the same moment — one wins, the others get 409 ALREADY_EXISTS, never a 500,
and what is stored is whole. On SQLite and PostgreSQL, with separate processes and separate engines."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import AlreadyExistsError, PluginSDK, SDKError
from pluginsdk.models import RequestStatus
from tests.support.backends import base_config
from tests.support.postgres import fresh_database

CONSTRAINT = {
    "name": "race",
    "description": "raced constraint",
    "object_type": "asset",
    "criteria_and": [{"field": "databaseId", "operator": "equals", "value": "db1"}],
    "group_permissions": [{"groupId": "readers", "permission": "GET", "permissionType": "allow"}],
}


def creations(sdk: PluginSDK, n: int) -> dict[str, Callable[[], Awaitable[Any]]]:
    """The six racing creations (round `n`), each naming the same object in every racer."""
    return {
        "template": lambda: sdk.create_template(template_id=f"race-tpl-{n}", image_id="ami-1"),
        "role": lambda: sdk.create_role(role_name=f"race-role-{n}", description="raced role"),
        "user_role": lambda: sdk.create_user_roles(f"newbie-{n}", ["basicReadOnly"]),
        "api_key": lambda: sdk.create_api_key(
            api_key_name=f"race-key-{n}", user_id="keyholder", description="raced key"
        ),
        "constraint": lambda: sdk.create_constraint(f"race-c-{n}", **CONSTRAINT),
        "request": lambda: sdk.create_request("web", 1, request_id=f"req-race-{n}"),
    }


async def outcome(call: Callable[[], Awaitable[Any]]) -> str:
    """`ok`, or the error code the caller got (never raised further: the test judges them)."""
    try:
        await call()
    except SDKError as exc:
        return exc.code
    return "ok"


async def prepare(sdk: PluginSDK) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1")
    await sdk.create_user_roles("keyholder", ["basicReadOnly"])


def assert_one_winner(results: list[dict[str, str]], rounds: int = 1) -> None:
    for n in range(rounds):
        for kind in ("template", "role", "user_role", "api_key", "constraint", "request"):
            got = [r[f"{kind}-{n}"] for r in results]
            assert all(g in ("ok", "ALREADY_EXISTS") for g in got), (kind, got)  # never a 500
            if kind == "request":  # a later racer may get the idempotent answer: one request is stored (below)
                assert "ok" in got, (kind, got)
            else:
                assert got.count("ok") == 1, (kind, got)


async def assert_whole(sdk: PluginSDK, rounds: int = 1) -> None:
    """Each raced object exists exactly once, readable and complete."""
    keys = [k async for k in sdk.iterate("list_api_keys")]
    roles = {r.role_name for r in (await sdk.list_roles()).message.items}
    assignments = {a.user_id: a.role_name for a in (await sdk.list_user_roles()).message.items}
    for n in range(rounds):
        assert (await sdk.get_template(f"race-tpl-{n}")).template.image_id == "ami-1"
        assert f"race-role-{n}" in roles
        assert assignments[f"newbie-{n}"] == ["basicReadOnly"]
        assert [k.api_key_name for k in keys].count(f"race-key-{n}") == 1
        assert (await sdk.get_constraint(f"race-c-{n}")).name == "race"
        req = await sdk.get_request(f"req-race-{n}")
        assert req.template_id == "web" and req.status is not RequestStatus.FAILED
    all_requests = [r.request_id for r in (await sdk.list_requests(limit=1000)).requests]
    assert sorted(r for r in all_requests if r.startswith("req-race-")) == [f"req-race-{n}" for n in range(rounds)]


_RACER = """
import asyncio, json, sys, time
from tests.test_store_races import creations, outcome
from pluginsdk import PluginSDK
async def main():
    config = json.loads(sys.argv[1]); start = float(sys.argv[2]); rounds = int(sys.argv[3])
    async with PluginSDK(config=config) as sdk:
        await sdk.get_configuration()
        time.sleep(max(0.0, start - time.time()))
        out = {}
        for n in range(rounds):
            calls = creations(sdk, n)
            got = await asyncio.gather(*(outcome(c) for c in calls.values()))
            out.update({f"{k}-{n}": g for k, g in zip(calls, got)})
    print(json.dumps(out))
asyncio.run(main())
"""


async def race_processes(config: dict[str, Any], processes: int, rounds: int) -> list[dict[str, str]]:
    start = time.time() + 2.5  # after every racer has started its engine
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _RACER,
            json.dumps(config),
            str(start),
            str(rounds),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(Path(__file__).resolve().parents[1]),
        )
        for _ in range(processes)
    ]
    results = []
    for p in procs:
        out, err = await asyncio.wait_for(p.communicate(), 120)
        assert p.returncode == 0, err.decode()[-2000:]
        results.append(json.loads(out))
    return results


async def race_engines(config: dict[str, Any], engines: int, rounds: int) -> list[dict[str, str]]:
    """Separate engines (own connections) in this process, released together at a barrier per round."""
    sdks = [PluginSDK(config=config) for _ in range(engines)]
    for s in sdks:
        await s.__aenter__()
    try:
        results: list[dict[str, str]] = [{} for _ in sdks]

        async def one(barrier: asyncio.Barrier, into: dict[str, str], key: str, call: Callable[[], Any]) -> None:
            await barrier.wait()
            into[key] = await outcome(call)

        for n in range(rounds):
            barrier = asyncio.Barrier(engines * 6)
            await asyncio.gather(
                *(
                    one(barrier, results[i], f"{k}-{n}", c)
                    for i, s in enumerate(sdks)
                    for k, c in creations(s, n).items()
                )
            )
        return results
    finally:
        for s in sdks:
            await s.__aexit__(None, None, None)


# -- SQLite --------------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_processes_racing_on_sqlite(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        await prepare(sdk)
    results = await race_processes(config, processes=4, rounds=3)
    assert_one_winner(results, rounds=3)
    async with PluginSDK(config=config) as sdk:
        await assert_whole(sdk, rounds=3)


async def test_engines_racing_on_sqlite(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        await prepare(sdk)
    assert_one_winner(await race_engines(config, engines=3, rounds=3), rounds=3)
    async with PluginSDK(config=config) as sdk:
        await assert_whole(sdk, rounds=3)


# -- PostgreSQL ----------------------------------------------------------------------------------------------


@pytest.fixture
async def pg_config(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    async with fresh_database() as url:
        yield base_config(
            tmp_path, storage={"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")}
        )


@pytest.mark.postgres
async def test_engines_racing_on_postgres(pg_config: dict[str, Any]) -> None:
    async with PluginSDK(config=pg_config) as sdk:
        await prepare(sdk)
    assert_one_winner(await race_engines(pg_config, engines=3, rounds=4), rounds=4)
    async with PluginSDK(config=pg_config) as sdk:
        await assert_whole(sdk, rounds=4)


@pytest.mark.postgres
@pytest.mark.slow
async def test_processes_racing_on_postgres(pg_config: dict[str, Any]) -> None:
    results = await race_processes(pg_config, processes=3, rounds=0)  # three processes open a new database
    assert results == [{}, {}, {}]
    async with PluginSDK(config=pg_config) as sdk:
        await prepare(sdk)
    results = await race_processes(pg_config, processes=3, rounds=2)
    assert_one_winner(results, rounds=2)
    async with PluginSDK(config=pg_config) as sdk:
        await assert_whole(sdk, rounds=2)


# -- the mapping itself --------------------------------------------------------------------------------------


async def test_a_unique_key_collision_is_409_naming_only_the_identifier(any_store: dict[str, Any]) -> None:
    """An INSERT that loses the race (no check before it) is ALREADY_EXISTS; a secret column is never echoed."""
    async with PluginSDK(config=any_store) as sdk:
        await prepare(sdk)
        key = await sdk.create_api_key(api_key_name="k1", user_id="keyholder", description="first key")
        engine = sdk.backend.engine  # type: ignore[attr-defined]
        db = engine.store.db
        row = dict(await db.fetchone("SELECT * FROM auth_api_keys WHERE api_key_name = 'k1'"))
        insert = (
            "INSERT INTO auth_api_keys (api_key_id, api_key_name, description, user_id, created_by, created_at,"
            " updated_at, expires_at, is_active, key_hash) VALUES (:api_key_id, :api_key_name, :description,"
            " :user_id, :created_by, :created_at, :updated_at, :expires_at, :is_active, :key_hash)"
        )
        with pytest.raises(AlreadyExistsError) as same_name:
            await db.execute(insert, {**row, "api_key_id": "other-id", "key_hash": "f" * 64})
        assert same_name.value.status == 409 and same_name.value.details == {"field": "api_key_name", "value": "k1"}
        with pytest.raises(AlreadyExistsError) as same_hash:
            await db.execute(insert, {**row, "api_key_id": "other-id", "api_key_name": "k2"})
        text = json.dumps(same_hash.value.to_envelope())
        assert row["key_hash"] not in text and key.api_key not in text and "k2" not in text
        assert same_hash.value.__cause__ is None and same_hash.value.__suppress_context__
        # the request path: a second INSERT of the same request id is 409, not a driver error
        stored = await engine.store.get_request((await sdk.create_request("web", 1, request_id="req-dup")).request_id)
        with pytest.raises(AlreadyExistsError) as dup:
            await engine.store.insert_request(stored)
        assert dup.value.details == {"field": "request_id", "value": "req-dup"}


async def test_executemany_outside_a_transaction_is_all_or_nothing(any_store: dict[str, Any]) -> None:
    async with PluginSDK(config=any_store) as sdk:
        db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
        sql = "INSERT INTO auth_user_roles (user_id, role_name, created_on) VALUES (:u, :r, :at)"
        await db.execute(sql, {"u": "amy", "r": "b", "at": "t"})
        with pytest.raises(AlreadyExistsError):
            await db.executemany(sql, [{"u": "amy", "r": "a", "at": "t"}, {"u": "amy", "r": "b", "at": "t"}])
        rows = await db.fetchall("SELECT role_name FROM auth_user_roles WHERE user_id = 'amy'")
        assert [r["role_name"] for r in rows] == ["b"]  # the first row was not kept


@pytest.mark.postgres
async def test_rest_callers_racing_on_postgres(pg_config: dict[str, Any], tmp_path: Path) -> None:
    """Concurrent REST requests to one server on PostgreSQL: the losers' answer is the 409 envelope."""
    from tests.support.remote import remote_sdk

    async with remote_sdk(pg_config, tmp_path) as sdk:
        await prepare(sdk)
        rounds = 3
        barrier = asyncio.Barrier(rounds * 6 * 3)

        async def one(key: str, call: Callable[[], Awaitable[Any]]) -> tuple[str, str]:
            await barrier.wait()
            return key, await outcome(call)

        got = await asyncio.gather(
            *(one(f"{k}-{n}", c) for n in range(rounds) for _ in range(3) for k, c in creations(sdk, n).items())
        )
        results: list[dict[str, str]] = [{}, {}, {}]
        for key, result in got:
            slot = next(r for r in results if key not in r)
            slot[key] = result
        assert_one_winner(results, rounds=rounds)
        await assert_whole(sdk, rounds=rounds)
