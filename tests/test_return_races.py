"""A machine is returned once: returns racing for the same machines from separate engines and processes on one
store (a SQLite file, a PostgreSQL database), reconciliations writing machines read before a claim, and a
process killed mid-return whose return another process then settles. Each machine ends in at most one
completed return request."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pluginsdk import PluginSDK
from pluginsdk.models import MachineStatus, Request, RequestStatus, ReturnRequestCreated

ROOT = Path(__file__).resolve().parents[1]
BOOT = 0.05
"""The local provider's boot delay in `base_config`."""
ROUNDS = 8


async def returns_of(sdk: PluginSDK) -> list[Request]:
    return list((await sdk.list_requests(request_type="return", limit=1000)).requests)


async def settled(sdk: PluginSDK, request_ids: list[str], seconds: float = 20.0) -> list[Request]:
    """The requests once none is pending or running (each status read reconciles)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        found = (await sdk.get_request_status(request_ids, report_missing=True)).requests
        if all(r.status.terminal for r in found) or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.05)


def assert_returned_once(returns: list[Request], answers: Sequence[ReturnRequestCreated] = ()) -> None:
    """No machine is in two completed returns: neither by what a return request lists nor by what its
    creation answered as processed."""
    completed = {r.request_id: r for r in returns if r.status is RequestStatus.COMPLETED}
    owner: dict[str, str] = {}
    for r in completed.values():
        for mid in r.machine_ids:
            assert mid not in owner, f"{mid} is in completed returns {owner[mid]} and {r.request_id}"
            owner[mid] = r.request_id
    processed: dict[str, str] = {}
    for a in answers:
        if a.request_id in completed:
            for mid in a.processed_machines:
                assert mid not in processed, f"{mid} was returned by {processed[mid]} and {a.request_id}"
                processed[mid] = a.request_id


async def running_machines(sdk: PluginSDK, count: int) -> list[str]:
    await sdk.create_template(template_id="web", image_id="ami-1")
    made = await sdk.create_request("web", count, wait=True)
    assert made.status == "completed", made
    return [m.machine_id for m in made.machines]


# -- the store decides: a write from a copy read before the claim never undoes it ----------------------------


async def test_a_write_from_a_copy_read_before_a_claim_never_undoes_it(any_store: dict[str, Any]) -> None:
    """A reconciliation (or a stop, a cancel) of another engine read the machine before the return claimed it
    and writes its copy afterwards: the claim stands, so a second return skips the machine."""
    async with PluginSDK(config=any_store) as a, PluginSDK(config=any_store) as b:
        mid = (await running_machines(a, 2))[0]
        engine_b = b.backend.engine  # type: ignore[attr-defined]
        read_before = await engine_b.store.get_machine(mid)
        first = await a.create_return_request([mid])
        assert first.processed_machines == [mid]
        await engine_b.store.upsert_machines([read_before.model_copy(update={"name": "late-write"})])
        claimed = await engine_b.store.get_machine(mid)
        assert claimed.return_request_id == first.request_id
        second = await b.create_return_request([mid])
        assert second.processed_machines == [] and second.skipped_machines[0].reason.startswith("already")
        (done,) = await settled(a, [first.request_id])
        assert done.status is RequestStatus.COMPLETED
        # gone now: a copy read while it still ran (same claim) cannot bring it back
        await engine_b.store.upsert_machines([claimed])
        assert (await a.get_machine(mid)).status is MachineStatus.TERMINATED
        third = await b.create_return_request([mid])
        assert "already gone" in third.message
        assert_returned_once(await returns_of(a), [first, second, third])


# -- engines racing: returns of the same machines while their requests are reconciled -----------------------


async def test_engines_racing_to_return_the_same_machines(any_store: dict[str, Any]) -> None:
    """Two engines return overlapping sets of machines still starting (so their provisioning requests are
    reconciled at the same moment by both engines), round after round."""
    async with PluginSDK(config=any_store) as a, PluginSDK(config=any_store) as b:
        await a.create_template(template_id="web", image_id="ami-1")
        answers: list[ReturnRequestCreated] = []
        origins: list[str] = []
        for _ in range(ROUNDS):
            made = await a.create_request("web", 4)
            origins.append(made.request_id)
            ids = [m.machine_id for m in made.machines]
            await asyncio.sleep(BOOT)  # up at the provider, still starting in the store: reconciling writes them
            calls = [
                a.get_request(made.request_id),
                b.get_request(made.request_id),
                a.create_return_request(ids[:3], force_return=True),
                b.create_return_request(ids[1:], force_return=True),
                b.create_return_request(list(reversed(ids)), force_return=True),
            ]
            got = await asyncio.gather(*calls)
            answers += [g for g in got if isinstance(g, ReturnRequestCreated)]
        ret_ids = [x.request_id for x in answers if x.request_id]
        await settled(a, ret_ids + origins)
        returns = await returns_of(b)
        assert_returned_once(returns, answers)
        claimed = [mid for x in answers for mid in x.processed_machines]
        assert len(claimed) == len(set(claimed)) == 4 * ROUNDS  # every machine taken exactly once


# -- a process killed mid-return, then reconciliation --------------------------------------------------------

_KILLED = """
import asyncio, json, sys
import backends.local.handlers.returns as returns
from pluginsdk import PluginSDK

async def stuck(engine, machines):  # the claim is recorded; the process dies before the provider is asked
    print("claimed", flush=True)
    await asyncio.sleep(3600)

returns._terminate = stuck

async def main():
    async with PluginSDK(config=json.loads(sys.argv[1])) as sdk:
        await sdk.create_return_request(json.loads(sys.argv[2]))

asyncio.run(main())
"""


async def test_a_process_killed_mid_return_and_the_return_settled_by_another(any_store: dict[str, Any]) -> None:
    async with PluginSDK(config=any_store) as sdk:
        ids = await running_machines(sdk, 3)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _KILLED,
        json.dumps(any_store),
        json.dumps(ids),
        stdout=asyncio.subprocess.PIPE,
        cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line.strip() == b"claimed"
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    async with PluginSDK(config=any_store) as a, PluginSDK(config=any_store) as b:
        (orphan,) = await returns_of(a)
        assert orphan.status is RequestStatus.RUNNING and sorted(orphan.machine_ids) == sorted(ids)
        # two returns of the same machines at once: the dead process's claim holds them
        raced = await asyncio.gather(a.create_return_request(ids), b.create_return_request(ids[::-1]))
        for answer in raced:
            assert answer.processed_machines == []
            assert {k.reason for k in answer.skipped_machines} == {f"already being returned by {orphan.request_id}"}
        # reconciliation takes the dead process's claim over, asks the provider and settles the return
        (done,) = await settled(b, [orphan.request_id])
        assert done.status is RequestStatus.COMPLETED, done.message
        machines = (await a.get_request(orphan.request_id, long=True)).machines
        assert {m.status for m in machines} == {MachineStatus.TERMINATED} and len(machines) == 3
        again = await asyncio.gather(a.create_return_request(ids), b.create_return_request(ids))
        assert all("already gone" in x.message and x.processed_machines == [] for x in again)
        returns = await returns_of(a)
        assert_returned_once(returns, [*raced, *again])
        assert [r.request_id for r in returns if r.machine_ids] == [orphan.request_id]
