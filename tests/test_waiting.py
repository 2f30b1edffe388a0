"""`pluginsdk.waiting`: the one way the CLI's progress line and the MCP server's progress notifications wait.

Real engine and `local` provider (machines boot after 0.5-1.5 x `boot_delay`), on both backends.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from pluginsdk.models import MachineStatus
from pluginsdk.operations import CreateRequestCommand
from pluginsdk.waiting import Progress, request_and_wait, when_rising
from tests.support.backends import open_sdk


def local_provider(boot_delay: float) -> dict[str, object]:
    return {"local": {"boot_delay": boot_delay, "terminate_delay": 0.05, "seed": 7}}


class Readings(list[Progress]):
    async def __call__(self, progress: Progress) -> None:
        self.append(progress)


async def test_every_reading_is_reported_until_the_request_finishes(backend_kind: str, tmp_path: Path) -> None:
    async with open_sdk(backend_kind, tmp_path, provider=local_provider(0.3)) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        readings = Readings()
        op = CreateRequestCommand(template_id="web", requested_count=3, wait=True, timeout=60)
        result = await request_and_wait(sdk, op, readings, poll=0.05)

    assert result.status == "completed" and len(result.machines) == 3
    assert all(m.status is MachineStatus.RUNNING for m in result.machines)
    assert len(readings) >= 3  # submitted, booting, finished: boots take 0.15-0.45 s, reads every 0.05 s
    assert {(p.request_id, p.total) for p in readings} == {(result.request_id, 3)}
    assert readings[0].running == 0 and readings[0].status in ("pending", "running")
    running = [p.running for p in readings]
    assert running == sorted(running) and len(set(running)) >= 2  # no failures configured: never falls
    elapsed = [p.elapsed for p in readings]
    assert elapsed == sorted(elapsed)
    assert [p.finished for p in readings] == [False] * (len(readings) - 1) + [True]
    last = readings[-1]
    assert (last.status, last.running) == ("completed", 3)
    assert last.text() == f"{result.request_id}: completed, 3/3 machines running ({last.elapsed:.0f}s)"


async def test_the_wait_gives_up_when_the_timeout_passes(tmp_path: Path) -> None:
    async with open_sdk("local", tmp_path, provider=local_provider(60)) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        readings = Readings()
        started = time.monotonic()
        op = CreateRequestCommand(template_id="web", requested_count=1, wait=True, timeout=1)
        result = await request_and_wait(sdk, op, readings, poll=0.2)
    assert time.monotonic() - started < 10
    assert readings and all(p.running == 0 for p in readings) and readings[-1].elapsed >= 1
    # the timeout is the request's own deadline too: the engine may fail it first
    if readings[-1].finished:
        assert result.status == "failed"
    else:
        assert result.status == "submitted" and result.message.endswith("after 1s; not waiting longer.")
    assert result.machines[0].status is not MachineStatus.RUNNING


async def test_a_dry_run_is_answered_without_waiting(local_sdk: PluginSDK) -> None:
    await local_sdk.create_template(template_id="web", image_id="ami-1")
    readings = Readings()
    op = CreateRequestCommand(template_id="web", requested_count=2, wait=True, dry_run=True)
    result = await request_and_wait(local_sdk, op, readings)
    assert result.dry_run and result.status == "dry-run" and readings == []


@pytest.mark.parametrize(
    ("counts", "passed"),
    [([0, 0, 1, 1, 3, 2, 3], [0, 1, 3]), ([2, 2, 2], [2]), ([1, 0, 0, 2], [1, 2]), ([], [])],
)
async def test_when_rising_passes_only_rises(counts: list[int], passed: list[int]) -> None:
    readings = Readings()
    report = when_rising(readings)
    for i, running in enumerate(counts):
        await report(Progress("req-1", "running", running, 3, float(i), False))
    assert [p.running for p in readings] == passed


async def test_every_wait_is_the_one_loop(backend_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain `create_request(wait=True)` waits through `pluginsdk.waiting.follow` on both backends: the
    engine reconciling the request itself, the remote client polling its status over HTTP."""
    from pluginsdk import waiting

    loops: list[float] = []
    one_loop = waiting.follow

    async def counted(*args: Any, **kwargs: Any) -> Any:
        loops.append(kwargs["poll"])
        return await one_loop(*args, **kwargs)

    monkeypatch.setattr(waiting, "follow", counted)
    async with open_sdk(backend_kind, tmp_path, provider=local_provider(0.1)) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        created = await sdk.create_request("web", 2, wait=True, timeout=60)
    assert created.status == "completed" and len(created.machines) == 2
    assert loops == [1.0 if backend_kind == "local" else waiting.POLL]


async def test_the_pauses_grow_to_the_poll_and_never_pass_the_timeout() -> None:
    """No busy loop: a wait reads after 0.05 s, then half as long again each time, at most every `poll`."""
    from itertools import islice

    from pluginsdk.models import Request, RequestStatus
    from pluginsdk.waiting import FIRST_POLL, follow, pauses

    assert list(islice(pauses(0.5), 7)) == pytest.approx([0.05, 0.075, 0.1125, 0.16875, 0.253125, 0.3796875, 0.5])
    assert list(islice(pauses(0.01), 3)) == [0.01] * 3
    reads: list[float] = []
    started = time.monotonic()

    async def read(request: Request) -> Request:
        reads.append(time.monotonic() - started)
        return request

    pending = Request(request_id="req-1", status=RequestStatus.PENDING, count=1)
    readings = Readings()
    last = await follow(read, pending, seconds=0.6, report=readings, poll=0.2, start=started)
    assert last.status is RequestStatus.PENDING and readings[-1].elapsed >= 0.6
    assert 4 <= len(reads) <= 8 and reads[0] >= FIRST_POLL  # 0.05 0.125 0.24 0.41 0.6: no busy loop
    assert [p.finished for p in readings] == [False] * len(readings)
    done = Request(request_id="req-1", status=RequestStatus.COMPLETED, count=1)
    assert await follow(read, done, seconds=60) is done  # a terminal request is not read again
