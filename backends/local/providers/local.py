"""The `local` provider: simulated machines with real state transitions.

Embedded default, so the SDK works with no cloud account. Machines boot after
`boot_delay` seconds, fail at `failure_rate`, and never exceed `capacity`
active machines. Ids and fates are derived from (seed, request id, index), so runs are
deterministic under a seed; a machine's host name and address are derived from its id alone
(unique among live machines, checked at launch), so every process reports the same ones, with or
without a seed. State is
kept in the engine's store (table `local_instances`, schema migration 2), so separate CLI
processes — how HPC schedulers call us — see the same machines.

Config (`provider.local`): boot_delay (s, default 2), terminate_delay
(s, default 1), failure_rate (0..1, default 0), terminate_failure_rate (0..1, default 0: the share
of terminate calls that fail with a ProviderError, to exercise failed returns), capacity (default
1000), seed (default none: random), run_user_data (default false; for tests: a booted machine runs its
template's `user_data` as a local shell process, stopped when the machine is terminated — so a scheduler's
node daemon can really start), user_data_log_dir (where those processes write; default: discarded).
Capacity faults, to exercise fallback between candidates (docs/providers.md): capacity_errors (instance types,
or `type@subnet`, whose every launch is refused with InsufficientInstanceCapacity) and capacity_failure_rate
(0..1: the share of launch calls refused so, drawn from the seed and the store's count of launch calls).
The keys and their ranges are checked when the configuration is loaded (`pluginsdk.config.LocalProviderSettings`).
Interruptions: reclaim_after (seconds after boot when the simulated cloud takes a running machine back, as
a spot interruption; default never) and reclaim_rate (0..1, default 1: the share of machines it takes).
Readiness: ready_rate (0..1, default 1: the share of booted machines that report ready by themselves, as a
startup script calling back would; 0 makes bootstrap failures). A machine whose template's startup script
runs (run_user_data) reports ready only through the script's own call (`machines ready`).
Several `local` instances share the table; each row names its instance (NULL: `local`), and `capacity` counts
one instance's machines.

A request may name its machines (`machine_names`, kept in the request's provider data): the i-th machine
launched is called by the i-th name (a scheduler's node name) instead of the name derived from its address.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pluginsdk.errors import ConfigurationError, ProviderError
from pluginsdk.models import Machine, MachineStatus, Request, Template

from ..store import Store
from ..store.local_instances import LocalInstances
from .base import LaunchResult, ProvisionedMachine

__all__ = ["LocalProvider"]

_RECLAIMED = 3
"""`local_instances.fails` of a machine the simulated cloud took back (0: fine, 1: fails to boot, 2: no capacity)."""
_RECLAIM_REASON = "Server.SpotInstanceTermination: simulated spot interruption"


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Startup scripts this process started, reaped once they end (no zombies in a long-lived server)."""


def _spawn(script: str, env: dict[str, str], log_dir: str | None, machine_id: str) -> subprocess.Popen[bytes]:
    """Start a startup script in a session of its own (terminate stops it and all it started); a fork and
    exec, short enough for the event loop."""
    out: Any = subprocess.DEVNULL
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        out = open(os.path.join(log_dir, f"{machine_id}.log"), "ab")  # noqa: SIM115 - closed below, once inherited
    try:
        proc = subprocess.Popen(  # noqa: S603 - the template's own script, run only where run_user_data is set
            ["/bin/sh", "-c", script],
            env=os.environ | env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if out is not subprocess.DEVNULL:
            out.close()
    _CHILDREN[proc.pid] = proc
    return proc


def _reap() -> None:
    for pid, proc in list(_CHILDREN.items()):
        if proc.poll() is not None:
            del _CHILDREN[pid]


class LocalProvider:
    """Simulated provider; see the module docstring for its settings."""

    apis: tuple[str, ...] = ("local", "aws", "RunInstances", "EC2Fleet", "SpotFleet", "ASG")

    def __init__(self, name: str = "local", config: Mapping[str, Any] | None = None, **_: Any) -> None:
        cfg = dict(config or {})
        self.name = name
        try:
            self.boot_delay = float(cfg.get("boot_delay", 2.0))
            self.terminate_delay = float(cfg.get("terminate_delay", 1.0))
            self.failure_rate = float(cfg.get("failure_rate", 0.0))
            self.terminate_failure_rate = float(cfg.get("terminate_failure_rate", 0.0))
            self.capacity = int(cfg.get("capacity", 1000))
            self.run_user_data = bool(cfg.get("run_user_data", False))
            self.user_data_log_dir = str(cfg["user_data_log_dir"]) if cfg.get("user_data_log_dir") else None
            self.capacity_failure_rate = float(cfg.get("capacity_failure_rate", 0.0))
            self.capacity_errors = frozenset(str(x) for x in cfg.get("capacity_errors") or ())
            after = cfg.get("reclaim_after")
            self.reclaim_after = float(after) if after is not None else None
            self.reclaim_rate = float(cfg.get("reclaim_rate", 1.0))
            self.ready_rate = float(cfg.get("ready_rate", 1.0))
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"Invalid provider.local setting: {exc}.", key="provider.local") from exc
        for key in ("failure_rate", "terminate_failure_rate", "capacity_failure_rate", "reclaim_rate", "ready_rate"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ConfigurationError(f"provider.local.{key} must be between 0 and 1.", key=f"provider.local.{key}")
        seed = cfg.get("seed")
        self.deterministic = seed is not None
        self.seed = str(seed) if seed is not None else f"{random.random()}"
        self._rows: LocalInstances | None = None
        self.clock = time.time

    def bind_store(self, store: Store) -> None:
        self._rows = LocalInstances(store.db)

    @property
    def _instances(self) -> LocalInstances:
        if self._rows is None:
            raise ProviderError("The local provider is not bound to a store.")
        return self._rows

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def _rand(self, *parts: object) -> random.Random:
        """A generator seeded from (seed, parts): the same inputs give the same fate."""
        digest = hashlib.sha256(":".join(map(str, (self.seed, *parts))).encode()).digest()
        return random.Random(digest)

    def _machine_id(self, request_id: str, index: int, salt: int = 0) -> str:
        text = f"{self.seed}:{request_id}:{index}" + (f":{salt}" if salt else "")
        if self.name != "local":  # another instance's machines never share an id with the default one's
            text += f":{self.name}"
        return "i-" + hashlib.sha256(text.encode()).hexdigest()[:17]

    @staticmethod
    def address(machine_id: str) -> str:
        """The private address of a machine: a function of its id only, so the same in every process."""
        n = int(hashlib.sha256(machine_id.encode()).hexdigest()[:8], 16) % (254 * 256 * 256)
        host, last = divmod(n, 254)
        return f"10.{host >> 8}.{host & 255}.{last + 1}"

    @staticmethod
    def host_name(address: str) -> str:
        return f"ip-{address.replace('.', '-')}.local"

    async def _taken_addresses(self) -> set[str]:
        """Addresses of machines that still exist (a host name must not name two live machines)."""
        return {self.address(i) for i in await self._instances.live_ids(self.clock() - 86400)}

    async def _active_count(self) -> int:
        return await self._instances.active_count(self.name, self.clock())

    async def launch(self, request: Request, template: Template, count: int) -> LaunchResult:
        await self._capacity_fault(template)
        free = self.capacity - await self._active_count()
        if free <= 0:
            raise ProviderError(
                f"Insufficient capacity: the local provider {self.name!r} holds {self.capacity} machines already.",
                details={"provider_code": "InsufficientInstanceCapacity", "operation": "launch"},
            )
        now = self.clock()
        existing = await self._instances.of_request(request.request_id)
        # idempotent per request, like AWS client tokens: a repeated launch (its first caller died before
        # recording it) makes only the machines the first one did not
        start_index = len(existing)
        taken = await self._taken_addresses()
        names = request.provider_data.get("machine_names") or []
        rows = []
        for i in range(start_index, count):
            salt = 0
            machine_id = self._machine_id(request.request_id, i)
            while self.address(machine_id) in taken:  # a new id, never a changed name later
                salt += 1
                machine_id = self._machine_id(request.request_id, i, salt)
            taken.add(self.address(machine_id))
            rng = self._rand(request.request_id, i)
            over_capacity = i - start_index >= free
            fails = over_capacity or rng.random() < self.failure_rate
            rows.append(
                {
                    "id": machine_id,
                    "r": request.request_id,
                    "t": template.instance_type,
                    "l": now,
                    "b": now + self.boot_delay * (0.5 + rng.random()),
                    "f": 2 if over_capacity else int(fails),
                    "n": names[i] if i < len(names) else None,
                    "p": None if self.name == "local" else self.name,
                }
            )
        if rows:
            await self._instances.insert(rows)
        machines = await self.describe(request, template)
        return LaunchResult(machines=machines, provider_data={"launched": count}, message=f"{count} machines launching")

    async def _capacity_fault(self, template: Template) -> None:
        """The capacity faults this instance is set to simulate: an instance type (or type@subnet) it has none
        of, and a share of launch calls refused."""
        itype = template.instance_type or next(iter(template.instance_types), None) or "*"
        wanted = {itype, *(f"{itype}@{s}" for s in template.subnet_ids)}
        refused = bool(wanted & self.capacity_errors)
        if not refused and self.capacity_failure_rate:
            refused = (await self._fate("local.launch_calls")) < self.capacity_failure_rate
        if refused:
            raise ProviderError(
                f"Insufficient capacity: the local provider {self.name!r} has no {itype} capacity now.",
                details={"provider_code": "InsufficientInstanceCapacity", "operation": "launch"},
            )

    def _state(self, row: Mapping[str, Any], now: float, scripted: bool = False) -> ProvisionedMachine:
        machine_id = row["instance_id"]
        reason = None
        term = row["terminate_at"]
        if term is not None:
            status = MachineStatus.TERMINATED if now >= term else MachineStatus.SHUTTING_DOWN
            reason = _RECLAIM_REASON if row["fails"] == _RECLAIMED else None
        elif row["fails"]:
            status = MachineStatus.FAILED if now >= row["boots_at"] or row["fails"] == 2 else MachineStatus.PENDING
            if status is MachineStatus.FAILED:
                reason = "InsufficientInstanceCapacity" if row["fails"] == 2 else "Simulated boot failure"
        else:
            status = MachineStatus.RUNNING if now >= row["boots_at"] else MachineStatus.PENDING
        ip = self.address(machine_id)
        return ProvisionedMachine(
            machine_id=machine_id,
            status=status,
            name=row["host_name"] or self.host_name(ip),
            ip_address=ip,
            instance_type=row["instance_type"],
            launched_at=datetime.fromtimestamp(row["launched_at"], UTC),
            reason=reason,
            ready=status is MachineStatus.RUNNING
            and not scripted
            and self._rand("ready", machine_id).random() < self.ready_rate,
        )

    async def describe(self, request: Request, template: Template | None) -> list[ProvisionedMachine]:
        rows = await self._instances.of_request(request.request_id)
        now = self.clock()
        scripted = self.run_user_data and template is not None and bool(template.user_data)
        states = [self._state(r, now, scripted) for r in rows]
        _reap()
        if scripted and template is not None:
            for row, state in zip(rows, states, strict=True):
                if state.status is MachineStatus.RUNNING and row["process_id"] is None:
                    await self._boot(row, state, template)
        return states

    async def _boot(self, row: Mapping[str, Any], state: ProvisionedMachine, template: Template) -> None:
        """Run the template's startup script for a machine that just booted; the store decides which process
        starts it (the one whose claim of the row succeeds), so it runs once whatever describes the machine."""
        if not await self._instances.claim_process(row["instance_id"]):
            return
        env = {
            "PLUGINSDK_MACHINE_ID": state.machine_id,
            "PLUGINSDK_MACHINE_NAME": state.name or "",
            "PLUGINSDK_MACHINE_IP": state.ip_address or "",
            "PLUGINSDK_REQUEST_ID": row["request_id"],
            "PLUGINSDK_TEMPLATE_ID": template.template_id,
        }
        proc = _spawn(template.user_data or "", env, self.user_data_log_dir, state.machine_id)
        await self._instances.set_process(row["instance_id"], proc.pid)

    async def _stop_processes(self, ids: Sequence[str]) -> None:
        """Stop the startup scripts (and what they started) of machines being terminated."""
        if not ids:
            return
        for pid in await self._instances.process_ids(ids):
            try:
                os.killpg(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                continue

    async def terminate(self, request: Request, machines: Sequence[Machine]) -> dict[str, MachineStatus]:
        now = self.clock()
        ids = [m.machine_id for m in machines]
        if self.terminate_failure_rate and (await self._fate("local.terminate_calls")) < self.terminate_failure_rate:
            raise ProviderError(
                "Simulated provider failure while terminating machines.",
                details={"provider_code": "SimulatedTerminateFailure", "operation": "terminate"},
            )
        await self._instances.terminate(ids, now + self.terminate_delay)
        if self.run_user_data:
            await self._stop_processes(ids)
        states = {m.machine_id: m.status for m in await self.describe(request, None)}
        return {i: states.get(i, MachineStatus.TERMINATED) for i in ids}

    async def _fate(self, key: str) -> float:
        """A number in [0, 1) for this call: drawn from (seed, how many calls of its kind the store has seen),
        so under a seed the n-th call always has the same fate, whichever process makes it."""
        count = await self._instances.count_call(key)
        kind = "terminate" if key == "local.terminate_calls" else key
        return self._rand(kind, count).random()

    async def reclaimed(self) -> list[ProvisionedMachine]:
        """Machines this instance's simulated cloud took back (`reclaim_after`, `reclaim_rate`): each running
        machine whose fate says so is terminated `reclaim_after` seconds after it booted, and reported here."""
        if self.reclaim_after is None:
            return []
        now = self.clock()
        due = await self._instances.running_since(now - self.reclaim_after, self.name)
        doomed = [r["instance_id"] for r in due if self._rand("reclaim", r["instance_id"]).random() < self.reclaim_rate]
        if doomed:
            await self._instances.mark_failed(doomed, _RECLAIMED, now)
        rows = await self._instances.failed_with(_RECLAIMED, self.name)
        return [self._state(r, now) for r in rows]

    async def health(self) -> dict[str, Any]:
        active = await self._active_count()
        return {"healthy": True, "active": active, "capacity": self.capacity, "deterministic": self.deterministic}
