"""Capacity fallback benchmark on the local provider (docs/providers.md), in one process, one command:

    .venv/bin/python bench/capacity_bench.py [--requests 1000 --samples 200]

1. Fallback latency: a template whose first candidate always refuses for capacity (`capacity_errors`) and whose
   cooldown is a millisecond, so every request probes it again; the time from the refused launch returning to
   the next candidate's launch being called (target: within one reconcile step, at most 1 s).
2. Launch path overhead: `create_request` (no wait) of a template with one candidate — the capacity check
   (`CapacityMemory.admit`, one point read), the attempt recorded before the provider call — against the same
   template without candidates (the baseline, the path every release had), alternated, median of each; the
   ratio, and the capacity check's own share of the launch.
3. Readiness check: reconciles (`sync_request`) of a running request whose template requires
   a readiness signal (`configuration.boot`) and whose machines never send it; the check's own time
   (`readiness.unready`: the readiness rows of the running machines) and its share of the reconcile.
4. Fan-out: 1,000 requests of 2 machines across three instances each refusing 30 % of launches for capacity
   (`capacity_failure_rate`, seeded), cooldown 1 ms (at the default 300 s a refused instance would sit out the
   whole run): every request ends; provider launch calls against the minimum possible (one per request).

Provider launch calls are counted by wrapping the local provider's `launch` here (the benchmark's own
instrument). Prints a table; `--json FILE` keeps the raw figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.local import readiness  # noqa: E402
from backends.local.providers.local import LocalProvider  # noqa: E402
from backends.local.store.capacity import CapacityMemory  # noqa: E402
from pluginsdk import PluginSDK, ProviderError  # noqa: E402

CALLS: list[tuple[str, float, float, bool]] = []
"""(instance, started, ended, refused) of every local launch."""
_launch = LocalProvider.launch


async def _counted(self: LocalProvider, request: Any, template: Any, count: int) -> Any:
    started = time.perf_counter()
    try:
        result = await _launch(self, request, template, count)
    except ProviderError:
        CALLS.append((self.name, started, time.perf_counter(), True))
        raise
    CALLS.append((self.name, started, time.perf_counter(), False))
    return result


LocalProvider.launch = _counted  # type: ignore[method-assign]

ADMIT: list[float] = []
"""Seconds of each capacity check (`CapacityMemory.admit`)."""
_admit = CapacityMemory.admit


async def _timed_admit(self: CapacityMemory, key: str) -> Any:
    started = time.perf_counter()
    try:
        return await _admit(self, key)
    finally:
        ADMIT.append(time.perf_counter() - started)


CapacityMemory.admit = _timed_admit  # type: ignore[method-assign]

READY: list[float] = []
"""Seconds of each readiness check (`readiness.unready`)."""
_unready = readiness.unready


async def _timed_unready(*args: Any) -> Any:
    started = time.perf_counter()
    try:
        return await _unready(*args)
    finally:
        READY.append(time.perf_counter() - started)


readiness.unready = _timed_unready

FAST = {"type": "local", "boot_delay": 0.01, "terminate_delay": 0.01, "seed": 11}


def _config(work: Path, instances: dict[str, dict[str, Any]], cooldown: float) -> dict[str, Any]:
    return {
        "storage": {"path": str(work / "store.db")},
        "provider": {
            "local": {"boot_delay": 0.01, "terminate_delay": 0.01, "capacity": 100_000},
            "instances": {n: {**FAST, "capacity": 100_000, **s} for n, s in instances.items()},
            "capacity": {"cooldown_seconds": cooldown, "max_cooldown_seconds": cooldown},
        },
        "sdk": {"reconcile_interval": 0.05},
        "app": {"authProvider": {"disableAuthorization": True}},
    }


async def fallback_latency(work: Path, samples: int) -> dict[str, float]:
    config = _config(work, {"dry": {"capacity_errors": ["m5.large"]}, "wet": {}}, 0.001)
    gaps = []
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(
            template_id="t", image_id="ami-1", instance_type="m5.large",
            offerings=[{"provider": "dry"}, {"provider": "wet"}],
        )  # fmt: skip
        for _ in range(samples):
            await asyncio.sleep(0.002)  # the millisecond cooldown ends: the next request probes `dry` again
            CALLS.clear()
            await sdk.create_request("t", 1)
            refused = next(c for c in CALLS if c[0] == "dry" and c[3])
            fallback = next(c for c in CALLS if c[0] == "wet")
            gaps.append(fallback[1] - refused[2])
    return _summary(gaps)


async def launch_overhead(work: Path, samples: int) -> dict[str, float]:
    config = _config(work, {"one": {}}, 300)
    plain: list[float] = []
    candidates: list[float] = []
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="plain", image_id="ami-1", provider="one")
        await sdk.create_template(template_id="cand", image_id="ami-1", offerings=[{"provider": "one"}])
        for _ in range(10):  # warm both paths
            await sdk.create_request("plain", 1)
            await sdk.create_request("cand", 1)
        ADMIT.clear()
        for _ in range(samples):
            for name, into in (("plain", plain), ("cand", candidates)):
                started = time.perf_counter()
                await sdk.create_request(name, 1)
                into.append(time.perf_counter() - started)
    base, ours = statistics.median(plain), statistics.median(candidates)
    check = statistics.median(ADMIT)
    return {
        "baseline_ms": base * 1000,
        "candidates_ms": ours * 1000,
        "ratio": ours / base,
        "check_ms": check * 1000,
        "check_share": check / ours,
    }


async def readiness_overhead(work: Path, samples: int) -> dict[str, float]:
    config = _config(work, {"never": {"ready_rate": 0.0}}, 300)
    reads: list[float] = []
    async with PluginSDK(config=config) as sdk:
        boot = {"boot": {"timeout_seconds": 3600}}
        await sdk.create_template(template_id="boot", image_id="ami-1", provider="never", configuration=boot)
        rid = (await sdk.create_request("boot", 2)).request_id or ""
        while sum(m.status.value == "running" for m in (await sdk.get_request(rid, long=True)).machines) < 2:
            await asyncio.sleep(0.02)
        READY.clear()
        for _ in range(samples):
            started = time.perf_counter()
            await sdk.sync_request(rid)
            reads.append(time.perf_counter() - started)
    read, check = statistics.median(reads), statistics.median(READY)
    return {"read_ms": read * 1000, "check_ms": check * 1000, "check_share": check / read}


async def fan_out(work: Path, requests: int) -> dict[str, float]:
    rate = {"capacity_failure_rate": 0.3}
    config = _config(work, {"a": rate, "b": rate, "c": rate}, 0.001)
    CALLS.clear()
    started = time.perf_counter()
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(
            template_id="t", image_id="ami-1",
            offerings=[{"provider": "a"}, {"provider": "b"}, {"provider": "c"}],
        )  # fmt: skip
        ids = []
        for _ in range(requests):
            try:
                ids.append((await sdk.create_request("t", 2, timeout=30)).request_id or "")
            except ProviderError as exc:
                ids.append(exc.details["request_id"])
        statuses: dict[str, int] = {}
        for rid in ids:
            while not (r := await sdk.get_request(rid)).status.terminal:
                await asyncio.sleep(0.02)
            statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        counters = (await sdk.get_metrics()).counters
    return {
        "requests": requests,
        "terminal": sum(statuses.values()),
        **{f"status_{k}": v for k, v in sorted(statuses.items())},
        "provider_launch_calls": len(CALLS),
        "minimum_calls": requests,
        "calls_per_request": len(CALLS) / requests,
        "refused_calls": sum(1 for c in CALLS if c[3]),
        "skipped_by_memory": counters.get("capacity.skipped", 0),
        "seconds": time.perf_counter() - started,
    }


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))] * 1000,
        "max_ms": ordered[-1] * 1000,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for sub in ("a", "b", "c", "d"):
            (work / sub).mkdir()
        figures = {
            "fallback": await fallback_latency(work / "a", args.samples),
            "overhead": await launch_overhead(work / "b", args.samples),
            "readiness": await readiness_overhead(work / "d", args.samples),
            "fan_out": await fan_out(work / "c", args.requests),
        }
    f, o, n, r = figures["fallback"], figures["overhead"], figures["fan_out"], figures["readiness"]
    print("| measure | figure | target |")
    print("|---|---:|---|")
    print(f"| capacity error -> fallback launch, median / p95 / max | {f['median_ms']:.2f} / {f['p95_ms']:.2f} / "
          f"{f['max_ms']:.2f} ms | ≤ 1,000 ms |")  # fmt: skip
    print(f"| create_request, no candidates (baseline) | {o['baseline_ms']:.2f} ms | |")
    print(f"| create_request, one candidate (memory + attempt record) | {o['candidates_ms']:.2f} ms | |")
    print(f"| ratio one candidate / baseline | {o['ratio']:.3f} | |")
    print(f"| the capacity check (admit), median, share of the launch | {o['check_ms']:.3f} ms, "
          f"{100 * o['check_share']:.1f} % | ≤ 5 % |")  # fmt: skip
    print(f"| reconcile of a request awaiting readiness (sync_request), median | {r['read_ms']:.2f} ms | |")
    print(f"| the readiness check, median, share of the reconcile | {r['check_ms']:.3f} ms, "
          f"{100 * r['check_share']:.1f} % | |")  # fmt: skip
    print(f"| {n['requests']} requests, 3 instances, 30 % refused: terminal | {n['terminal']} | all |")
    print(f"| provider launch calls / minimum | {n['provider_launch_calls']} / {n['minimum_calls']} "
          f"({n['calls_per_request']:.3f} per request) | |")  # fmt: skip
    print(f"| refused calls, candidates skipped by the memory | {n['refused_calls']}, {n['skipped_by_memory']:.0f} | |")
    print(f"| statuses | {', '.join(f'{k[7:]} {v}' for k, v in n.items() if k.startswith('status_'))} | |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
