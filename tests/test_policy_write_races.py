"""An upsert is one write, and each policy write has its own revision: callers racing through two engines or
two REST servers on one store (a SQLite file, a PostgreSQL database)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from pluginsdk import PluginSDK
from pluginsdk.models import ConstraintWritten
from tests.support.remote import admin_key, running_server

N = 12

BODY = {
    "name": "raced",
    "objectType": "asset",
    "criteriaAnd": [{"field": "databaseId", "operator": "equals", "value": "db1"}],
    "groupPermissions": [{"groupId": "readers", "permission": "GET", "permissionType": "allow"}],
}


async def together(calls: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """The calls released at one barrier."""
    barrier = asyncio.Barrier(len(calls))

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        await barrier.wait()
        return await call()

    return await asyncio.gather(*(one(c) for c in calls))


async def assert_last_write_won(sdk: PluginSDK, written: list[tuple[int, str]]) -> None:
    """One row of the id remains, holding the write with the highest revision; every revision is distinct."""
    revisions = [rev for rev, _ in written]
    assert len(set(revisions)) == len(revisions), sorted(revisions)
    stored = [c for c in (await sdk.list_constraints()).message.items if c.constraint_id == "raced"]
    assert len(stored) == 1
    assert stored[0].description == max(written)[1]


async def test_engines_upserting_one_constraint(any_store: dict[str, Any]) -> None:
    async with PluginSDK(config=any_store) as a, PluginSDK(config=any_store) as b:
        sdks = [a, b]

        def upsert(i: int) -> Callable[[], Awaitable[ConstraintWritten]]:
            return lambda: sdks[i % 2].create_constraint(
                "raced",
                name="raced",
                description=f"write {i}",
                object_type="asset",
                criteria_and=BODY["criteriaAnd"],
                group_permissions=BODY["groupPermissions"],
                replace_existing=True,
            )

        got: list[ConstraintWritten] = await together([upsert(i) for i in range(N)])
        assert sorted(g.operation for g in got) == ["create"] + ["update"] * (N - 1)
        descriptions = {g.revision: json.loads(g.constraint or "{}")["description"] for g in got}
        assert all(r is not None for r in descriptions)
        await assert_last_write_won(a, [(r or 0, d) for r, d in descriptions.items()])


@asynccontextmanager
async def two_servers(config: dict[str, Any]) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Clients of two REST servers on the one store, acting as the administrator."""
    key = await admin_key(config)
    with running_server(config) as one, running_server(config) as two:
        clients = [httpx.AsyncClient(base_url=url, headers={"Authorization": key}, timeout=30) for url in (one, two)]
        try:
            yield clients
        finally:
            for c in clients:
                await c.aclose()


async def test_rest_servers_upserting_one_constraint(any_store: dict[str, Any]) -> None:
    """The REST default (`replaceExisting`): every caller gets a success (one creates, the others replace),
    never 409, on either server."""
    async with two_servers(any_store) as clients:

        def post(i: int) -> Callable[[], Awaitable[httpx.Response]]:
            body = {**BODY, "description": f"write {i}"}
            return lambda: clients[i % 2].post("/auth/constraints/raced", json=body)

        answers: list[httpx.Response] = await together([post(i) for i in range(N)])
    assert {r.status_code for r in answers} <= {200, 201}, [r.text for r in answers]
    assert sorted(r.json()["operation"] for r in answers) == ["create"] + ["update"] * (N - 1)
    written = [(r.json()["revision"], json.loads(r.json()["constraint"])["description"]) for r in answers]
    async with PluginSDK(config=any_store) as sdk:
        await assert_last_write_won(sdk, written)


async def test_concurrent_policy_writes_each_get_their_own_revision(any_store: dict[str, Any]) -> None:
    """Roles, constraints and user roles written at once through two servers: as many revisions as writes,
    and the audit log records each write under the revision its caller was given."""
    async with two_servers(any_store) as clients:
        calls: list[Callable[[], Awaitable[httpx.Response]]] = []
        for i in range(N // 2):
            client = clients[i % 2]
            calls += [
                lambda c=client, i=i: c.post("/roles", json={"roleName": f"role-{i}", "description": "raced"}),
                lambda c=client, i=i: c.post(f"/auth/constraints/c-{i}", json={**BODY, "description": "raced"}),
                lambda c=client, i=i: c.post(
                    "/user-roles", json={"userId": f"user-{i}", "roleName": ["basicReadOnly"]}
                ),
            ]
        answers: list[httpx.Response] = await together(calls)
    assert {r.status_code for r in answers} <= {200, 201}, [r.text for r in answers if r.status_code >= 300]
    revisions = [r.json()["revision"] for r in answers]
    assert None not in revisions and len(set(revisions)) == len(calls), sorted(revisions)
    async with PluginSDK(config=any_store) as sdk:
        records = [r async for r in sdk.iterate("list_audit_records")]
    audited = sorted(r.revision for r in records if r.actor == "administrator" and r.revision in revisions)
    assert audited == sorted(revisions)
