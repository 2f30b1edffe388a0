"""What the worker tells the controller, and what it reads back, through `scontrol`."""

from __future__ import annotations

import asyncio
import logging
import shlex
from dataclasses import dataclass

__all__ = ["Node", "Scontrol"]

log = logging.getLogger("pluginsdk.schedulers.slurm")

REASON_PREFIX = "pluginsdk: "
"""Every reason the worker sets starts with this, so a person (and the reconcile step) can tell ours apart."""


@dataclass(slots=True, frozen=True)
class Node:
    """A node as `scontrol -o show node` reports it."""

    name: str
    state: frozenset[str]
    """State and flags (`IDLE`, `CLOUD`, `POWERED_DOWN`, `POWERING_UP`, `DOWN`, `NOT_RESPONDING`, ...)."""
    reason: str = ""

    @property
    def powered_up(self) -> bool:
        """Slurm counts it as having (or getting) a machine."""
        return not self.state & {"POWERED_DOWN", "POWERING_DOWN"}

    @property
    def registered(self) -> bool:
        return not self.state & {"POWERING_UP", "NOT_RESPONDING", "POWERED_DOWN", "DOWN"}


class Scontrol:
    """Runs the configured `scontrol` (an absolute path: the programs run with a minimal PATH)."""

    def __init__(self, path: str) -> None:
        self.path = path

    async def run(self, *args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            self.path, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"{self.path} {shlex.join(args)}: {err.decode(errors='replace').strip()}")
        return out.decode(errors="replace")

    async def down(self, nodes: list[str], reason: str) -> None:
        """Mark nodes DOWN with our reason at once, so Slurm requeues their jobs instead of waiting out
        ResumeTimeout, then power them down (the reason stays on the node; after SuspendTimeout the node is
        back in the pool, powered down, for a later job)."""
        if not nodes:
            return
        from .programs import collect

        names, text = collect(nodes), (REASON_PREFIX + reason)[:240]
        log.warning("marking %s down: %s", names, text)
        await self.run("update", f"nodename={names}", "state=down", f"reason={text}")
        await self.run("update", f"nodename={names}", "state=power_down_force", f"reason={text}")

    async def address(self, node: str, ip: str, host: str | None) -> None:
        await self.run("update", f"nodename={node}", f"nodeaddr={ip}", f"nodehostname={host or ip}")

    async def nodes(self) -> dict[str, Node]:
        """Every node the controller knows, by name."""
        found: dict[str, Node] = {}
        for line in (await self.run("-o", "show", "node")).splitlines():
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            name = fields.get("NodeName")
            if not name:
                continue
            reason = line.split("Reason=", 1)[1].strip() if "Reason=" in line else ""
            found[name] = Node(name, frozenset(fields.get("State", "").split("+")), reason)
        return found
