"""The worker: turn spooled program calls into engine work, through the SDK (either backend).

One worker runs at a time per spool directory (an exclusive lock). Per resume it launches one machine per
node, named after the node, grouped into one request per template (best effort) or per job and template
(`slurm.all_or_nothing`); every request id derives from the spool file's id, so a worker taking over a dead
one's file replays the same requests. It then follows the requests while it takes new spool files: a node
whose machine cannot be had is marked DOWN with the cause at once (Slurm requeues its job); under
all-or-nothing a job missing any node gives back what it got. Suspend and resume-fail return the nodes'
machines; reboot returns them and launches new ones under the same node names. A launch no longer followed
(the worker died, or its time ran out) is the reconcile step's.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...constants import REQUEST_ID_PREFIX, RETURN_ID_PREFIX
from . import spool
from .nodes import NodeMap
from .scontrol import Scontrol

if TYPE_CHECKING:
    from ...models import Machine, Request
    from ...sdk import PluginSDK

__all__ = ["Worker", "exclusive"]

log = logging.getLogger("pluginsdk.schedulers.slurm")

_POLL = 0.5
"""Seconds between reads of a resume's requests while their machines come up."""


@contextmanager
def exclusive(spool_dir: Path, *, wait: bool = False) -> Iterator[bool]:
    """Hold the spool's worker lock; yields whether this process got it (with `wait`, always, once the
    worker that holds it is done)."""
    spool_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(spool_dir / "worker.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class Worker:
    """Does the spooled work of one spool directory on an open SDK."""

    def __init__(self, sdk: PluginSDK, spool_dir: Path) -> None:
        settings = sdk.settings.slurm
        self.sdk = sdk
        self.spool_dir = spool_dir
        self.nodes = NodeMap(settings)
        self.scontrol = Scontrol(settings.scontrol)
        self.all_or_nothing = settings.all_or_nothing
        self.resume_timeout = settings.resume_timeout
        self.set_address = settings.set_node_address
        self._unknown: list[str] = []
        """Nodes of the intent at hand that no node set names."""
        self._down: set[str] = set()
        """Nodes already marked down for the launches being followed."""
        self._watching: dict[str, tuple[spool.Intent, list[str], float]] = {}
        """Launches being followed: request id -> (its intent, its nodes, when to stop following)."""

    async def drain(self) -> int:
        """Do every spooled intent, oldest first, and follow the launches they made, until nothing is left to
        do or follow; the number of intents done. A spool file is deleted once its requests are recorded, so
        a later suspend never waits behind the machines of an earlier resume coming up."""
        done = 0
        while True:
            batch = list(spool.pending(self.spool_dir))
            for path, intent in batch:
                await self.do(intent)
                path.unlink(missing_ok=True)
                done += 1
            if self._watching:
                await self._follow()
            elif not batch:
                return done
            if self._watching:
                await asyncio.sleep(_POLL)

    async def do(self, intent: spool.Intent) -> None:
        """Launch (resume), return (suspend, resume-fail) or replace (reboot) what one program call asked for."""
        if intent.action == "resume":
            await self.resume(intent)
        elif intent.action == "reboot":
            await self.reboot(intent)
        else:
            await self.release(intent)

    async def reboot(self, intent: spool.Intent) -> None:
        """A new machine for each node, under the node's name: the machines it had before the reboot was asked
        for are returned, then the nodes are launched as for a resume. A worker replaying the file finds the old
        machines in their return and the launches recorded under the same ids: nothing twice."""
        old = [m for m in (await self._machines_by_name(intent.nodes)).values() if m.created_at.timestamp() < intent.at]
        if old:
            await self.sdk.create_return_request(
                machine_ids=[m.machine_id for m in old],
                force_return=True,
                request_id=f"{RETURN_ID_PREFIX}slurm-{intent.id}",
            )
        await self.resume(intent)

    # -- resume -------------------------------------------------------------------------------------------

    def _launches(self, intent: spool.Intent) -> list[tuple[str, str, list[str]]]:
        """(request id, template, nodes) per launch: per template, or per job and template."""
        groups, unknown = self.nodes.by_template(intent.nodes)
        self._unknown = unknown
        if not self.all_or_nothing or not intent.jobs:
            return [
                (f"{REQUEST_ID_PREFIX}slurm-{intent.id}-{i}", t, n) for i, (t, n) in enumerate(sorted(groups.items()))
            ]
        launches: list[tuple[str, str, list[str]]] = []
        wanted = set(intent.nodes)
        seen: set[str] = set()
        units = [(str(j.job_id), [n for n in j.nodes if n in wanted]) for j in intent.jobs]
        units.append(("rest", [n for n in intent.nodes if not any(n in j.nodes for j in intent.jobs)]))
        for unit, listed in units:
            names = [n for n in listed if n not in seen]
            seen.update(names)
            by_template, _ = self.nodes.by_template(names)
            for i, (t, n) in enumerate(sorted(by_template.items())):
                launches.append((f"{REQUEST_ID_PREFIX}slurm-{intent.id}-{unit}-{i}", t, n))
        return launches

    async def resume(self, intent: spool.Intent) -> None:
        launches = self._launches(intent)
        if self._unknown:
            await self.scontrol.down(self._unknown, "no template for this node (slurm.nodesets)")
        have = await self._machines_by_name(intent.nodes)
        started: list[tuple[str, list[str]]] = []
        for request_id, template, nodes in launches:
            fresh = [n for n in nodes if n not in have]
            if not fresh:
                continue
            try:
                await self.sdk.create_request(
                    template_id=template,
                    requested_count=len(fresh),
                    machine_names=fresh,
                    request_id=request_id,
                    timeout=self.resume_timeout,
                )
            except Exception as exc:  # the engine's refusal (capacity, quota, bad template): nodes down at once
                await self.scontrol.down(fresh, f"launch from template {template} failed: {_cause(exc)}")
                await self._job_failed(intent, fresh)
                continue
            started.append((request_id, fresh))
        deadline = time.monotonic() + self.resume_timeout
        for request_id, nodes in started:
            self._watching[request_id] = (intent, nodes, deadline)

    async def _follow(self) -> None:
        """One look at the launches being followed: failed nodes go down at once; a launch whose nodes all run
        or failed (or whose time is up: the reconcile step takes over) is no longer followed."""
        now = time.monotonic()
        ids = list(self._watching)
        for at in range(0, len(ids), 1000):  # a status read takes at most 1,000 ids
            result = await self.sdk.get_request_status(request_ids=ids[at : at + 1000], report_missing=True)
            for request in result.requests:
                intent, nodes, deadline = self._watching[request.request_id]
                if await self._settle(intent, request, nodes) or now > deadline:
                    del self._watching[request.request_id]
            for missing in result.not_found:
                self._watching.pop(missing, None)

    async def _settle(self, intent: spool.Intent, request: Request, nodes: list[str]) -> bool:
        """Act on what is known of one launch; whether it needs no more watching."""
        by_name = {m.name: m for m in request.machines if m.name}
        failed = _failed(request, nodes, by_name)
        new = [n for n in failed if n not in self._down]
        self._down.update(new)
        if new:
            await self.scontrol.down(new, f"machine failed ({request.template_id}): {_failure(request, new, by_name)}")
            if await self._job_failed(intent, new):
                return True
        running = [by_name[n] for n in nodes if n in by_name and by_name[n].status.value == "running"]
        if self.set_address:
            await self._tell_addresses(running)
        return request.status.terminal or len(running) + len(failed) >= len(nodes)

    async def _tell_addresses(self, running: list[Machine]) -> None:
        for machine in running:
            if machine.ip_address and machine.name:
                await self.scontrol.address(machine.name, machine.ip_address, machine.name)

    async def _job_failed(self, intent: spool.Intent, failed: list[str]) -> bool:
        """All-or-nothing: every job holding a failed node gives back its other nodes' machines and they go
        down too. Whether anything was given back."""
        if not self.all_or_nothing:
            return False
        gone = set(failed)
        partners = [n for j in intent.jobs if gone & set(j.nodes) for n in j.nodes if n not in gone]
        if not partners:
            return False
        await self.scontrol.down(partners, "another node of the job could not be had (slurm.all_or_nothing)")
        await self._return(partners, f"{RETURN_ID_PREFIX}slurm-{intent.id}-aon")
        return True

    # -- suspend, resume-fail -----------------------------------------------------------------------------

    async def release(self, intent: spool.Intent) -> None:
        await self._return(intent.nodes, f"{RETURN_ID_PREFIX}slurm-{intent.id}")

    async def _return(self, nodes: list[str], request_id: str) -> None:
        machines = await self._machines_by_name(nodes)
        if not machines:
            return
        await self.sdk.create_return_request(
            machine_ids=[m.machine_id for m in machines.values()], force_return=True, request_id=request_id
        )

    async def _machines_by_name(self, nodes: list[str]) -> dict[str, Machine]:
        """The machines that exist for these nodes (one each), by node name."""
        wanted = set(nodes)
        found: dict[str, Machine] = {}
        async for machine in self.sdk.iterate("list_machines", active_only=True, limit=1000):
            if machine.name in wanted and machine.return_request_id is None:
                found.setdefault(machine.name, machine)
        return found


def _failed(request: Request, nodes: list[str], by_name: dict[str, Machine]) -> list[str]:
    """The nodes of a launch whose machine failed or went away, or never came (the request is over)."""
    gone = [n for n in nodes if n in by_name and by_name[n].status.value in ("failed", "terminated")]
    return [n for n in nodes if n not in by_name and request.status.terminal] + gone


def _failure(request: Request, nodes: list[str], by_name: dict[str, Machine]) -> str:
    """Why these nodes' machines failed: their reasons, else the request's message."""
    reasons = sorted({r for n in nodes if n in by_name and (r := by_name[n].status_reason)})
    return "; ".join(reasons) or request.message or "the provider did not deliver it"


def _cause(exc: Exception) -> str:
    """The engine error's own message (it names the cause: capacity, quota, a missing template)."""
    message: Any = getattr(exc, "message", None) or str(exc)
    return str(message).splitlines()[0][:200]
