"""The capacity memory across processes: two engines on one store (SQLite file, PostgreSQL), a restart, a
process killed between a failed launch and its fallback; and a property over any sequence of failures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pluginsdk import PluginSDK, ProviderError
from pluginsdk.models import RequestStatus
from tests.support.backends import base_config

ROOT = Path(__file__).resolve().parents[2]
FAST = {"boot_delay": 0.05, "terminate_delay": 0.05, "seed": 3}


def _with_candidates(config: dict[str, Any]) -> dict[str, Any]:
    config["provider"]["instances"] = {
        "east": {"type": "local", **FAST, "capacity_errors": ["m5.large"]},
        "west": {"type": "local", **FAST},
    }
    return config


async def _template(sdk: PluginSDK) -> None:
    await sdk.create_template(
        template_id="burst", image_id="ami-1", instance_type="m5.large",
        offerings=[{"provider": "east"}, {"provider": "west"}],
    )  # fmt: skip


async def test_two_engines_share_the_memory_and_it_survives_a_restart(any_store: dict[str, Any]) -> None:
    config = _with_candidates(any_store)
    async with PluginSDK(config=config) as a, PluginSDK(config=config) as b:
        await _template(a)
        first = await a.create_request("burst", 1, wait=True, timeout=30)
        assert first.machines[0].provider_name == "west"
        later = await b.create_request("burst", 1, wait=True, timeout=30)  # b never asked east itself
        r = await b.get_request(later.request_id or "", long=True)
        assert [x["provider"] for x in r.provider_data["skipped"]] == ["east"]
        assert [x["provider"] for x in r.provider_data["attempts"]] == ["west"]
    async with PluginSDK(config=config) as again:
        (east,) = (await again.get_providers_status()).offerings
        assert (east.provider, east.state, east.failures) == ("east", "cooling", 1)


_KILLED = """
import asyncio, json, os, signal, sys
from backends.local.providers.local import LocalProvider
from pluginsdk import PluginSDK

launch = LocalProvider.launch

async def dies_before_the_fallback(self, request, template, count):
    if self.name == "west":  # east has refused and it is recorded: the process dies before west is asked
        print(request.request_id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return await launch(self, request, template, count)

LocalProvider.launch = dies_before_the_fallback

async def main():
    async with PluginSDK(config=json.loads(sys.argv[1])) as sdk:
        await sdk.create_template(template_id="burst", image_id="ami-1", instance_type="m5.large",
                                  offerings=[{"provider": "east"}, {"provider": "west"}])
        await sdk.create_request("burst", 2, request_id="req-killed")

asyncio.run(main())
"""


async def test_a_process_killed_between_a_failed_launch_and_its_fallback_loses_nothing(
    any_store: dict[str, Any],
) -> None:
    config = _with_candidates(any_store)
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _KILLED, json.dumps(config),
        stdout=asyncio.subprocess.PIPE, cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert child.stdout is not None
    line = await asyncio.wait_for(child.stdout.readline(), 60)
    assert line.strip() == b"req-killed-1"  # the fallback's launch id: the second attempt
    assert await asyncio.wait_for(child.wait(), 30) == -signal.SIGKILL
    async with PluginSDK(config=config) as sdk:
        stored = await sdk.backend.engine.store.get_request("req-killed")  # type: ignore[attr-defined]
        assert stored.status is RequestStatus.PENDING  # as the dead process left it
        assert [(a["provider"], a["outcome"]) for a in stored.provider_data["attempts"]] == [
            ("east", "capacity"), ("west", "launching"),
        ]  # fmt: skip
        deadline = time.monotonic() + 20
        while True:  # a status read reconciles: the claim of a dead process is taken over, the launch resumed
            r = await sdk.get_request("req-killed", long=True)
            if r.status.terminal or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert r.status is RequestStatus.COMPLETED, r.message
        assert sorted(m.provider_name for m in r.machines) == ["west", "west"]
        assert [(a["provider"], a["outcome"]) for a in r.provider_data["attempts"]] == [
            ("east", "capacity"), ("west", "served"),
        ]  # fmt: skip


# -- property: whatever fails, no request holds more than it asked for and every one ends -------------------

_INSTANCE = st.fixed_dictionaries(
    {
        "capacity": st.integers(0, 4),
        "capacity_failure_rate": st.sampled_from([0.0, 0.3, 0.7, 1.0]),
        "failure_rate": st.sampled_from([0.0, 0.3]),
    }
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fleet=st.lists(_INSTANCE, min_size=3, max_size=3),
    counts=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    seed=st.integers(0, 1000),
)
def test_any_sequence_of_capacity_failures_leaves_no_request_over_its_count_or_unfinished(
    fleet: list[dict[str, Any]], counts: list[int], seed: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run_property(Path(tmp), fleet, counts, seed))


async def _run_property(tmp: Path, fleet: list[dict[str, Any]], counts: list[int], seed: int) -> None:
    names = ["a", "b", "c"]
    config = base_config(tmp, provider={"capacity": {"cooldown_seconds": 0.05, "max_cooldown_seconds": 0.2}})
    config["provider"]["instances"] = {
        n: {"type": "local", "boot_delay": 0.02, "terminate_delay": 0.02, "seed": seed, **f}
        for n, f in zip(names, fleet, strict=True)
    }
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(
            template_id="t", image_id="ami-1", offerings=[{"provider": n, "weight": -i} for i, n in enumerate(names)]
        )
        ids = []
        for count in counts:
            try:
                ids.append((await sdk.create_request("t", count, timeout=3)).request_id or "")
            except ProviderError as exc:  # nothing could launch: recorded failed
                ids.append(exc.details["request_id"])
        deadline = time.monotonic() + 15
        for rid in ids:
            while True:
                r = await sdk.get_request(rid, long=True)
                assert sum(1 for m in r.machines if m.status.active) <= r.count
                if r.status.terminal:
                    break
                assert time.monotonic() < deadline, f"{rid} left {r.status.value}: {r.message}"
                await asyncio.sleep(0.03)
        active = {p.name: p.active_machines for p in (await sdk.get_providers_status()).providers}
        for n, f in zip(names, fleet, strict=True):
            assert active.get(n, 0) <= f["capacity"]
