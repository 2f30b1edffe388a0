"""Several engines on one store (how HPC schedulers call us: many CLI processes) agree on state."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pluginsdk import PluginSDK
from pluginsdk.models import MachineStatus, RequestStatus
from tests.support.backends import base_config


async def test_two_engines_share_requests_and_machines(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as a, PluginSDK(config=config) as b:
        await a.create_template(template_id="web", image_id="ami-1")
        reqs = await asyncio.gather(*(s.create_request("web", 2) for s in (a, b, a, b)))
        ids = [r.id for r in reqs]
        assert len(set(ids)) == 4
        for _ in range(100):  # both engines advance the same requests concurrently
            seen = await asyncio.gather(*(s.get_request(i) for s in (a, b) for i in ids))
            if all(r.status is RequestStatus.COMPLETED for r in seen):
                break
            await asyncio.sleep(0.05)
        assert {r.status for r in seen} == {RequestStatus.COMPLETED}
        machines = (await b.list_machines(limit=100)).machines
        assert len(machines) == 8 and {m.status for m in machines} == {MachineStatus.RUNNING}
        # a machine returned through one engine is seen as returned by the other, and never twice
        mid = machines[0].machine_id
        first, second = await asyncio.gather(a.create_return_request([mid]), b.create_return_request([mid]))
        returned = [r for r in (first, second) if r.request_id]
        assert len(returned) == 1
        other = second if returned[0] is first else first
        assert other.skipped_machines[0].reason.startswith("already being returned")


_RACER = """
import asyncio, json, sys, time
from pluginsdk import PluginSDK
async def main():
    config = json.loads(sys.argv[1]); mid = sys.argv[2]; start = float(sys.argv[3])
    async with PluginSDK(config=config) as sdk:
        await sdk.get_configuration()
        time.sleep(max(0.0, start - time.time()))
        res = await sdk.create_return_request([mid])
        print(json.dumps({"request_id": res.request_id, "skipped": [s.reason for s in res.skipped_machines]}))
asyncio.run(main())
"""


async def test_processes_racing_to_return_one_machine(tmp_path: Path) -> None:
    import json
    import sys
    import time

    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        mid = (await sdk.create_request("web", 1, wait=True)).machines[0].machine_id
    start = time.time() + 1.5
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", _RACER, json.dumps(config), mid, str(start), stdout=asyncio.subprocess.PIPE
        )
        for _ in range(4)
    ]
    outs = [json.loads((await p.communicate())[0]) for p in procs]
    winners = [o for o in outs if o["request_id"]]
    assert len(winners) == 1, outs
    assert all(o["skipped"] and o["skipped"][0].startswith("already") for o in outs if not o["request_id"])
