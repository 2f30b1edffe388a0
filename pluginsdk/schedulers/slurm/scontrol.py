"""What the worker tells the controller, and what it reads back, through `scontrol`."""

from __future__ import annotations

import asyncio
import logging
import shlex
from dataclasses import dataclass
from typing import Any

from ...errors import SDKError

__all__ = ["ControllerError", "Node", "Scontrol"]

log = logging.getLogger("pluginsdk.schedulers.slurm")

REASON_PREFIX = "pluginsdk: "
"""Every reason the worker sets starts with this, so a person (and the reconcile step) can tell ours apart."""


class ControllerError(SDKError):
    """`scontrol` failed: the controller is unreachable or refused (`details`: the command and its stderr), or
    `scontrol` is not on this host (`missing`)."""

    error_code = "SCHEDULER_UNAVAILABLE"
    http_status = 503

    def __init__(self, message: str, *, missing: bool = False, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.missing = missing


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
        """Its stdout; ControllerError when it cannot run or exits non-zero (the controller is down, say)."""
        command = shlex.join([self.path, *args])
        try:
            proc = await asyncio.create_subprocess_exec(
                self.path, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
        except OSError as exc:  # not installed here, not executable
            missing = isinstance(exc, FileNotFoundError)
            raise ControllerError(
                f"Cannot run {self.path}: {exc.strerror or exc} (slurm.scontrol).",
                missing=missing,
                details={"field": "slurm.scontrol", "command": command},
            ) from None
        out, err = await proc.communicate()
        if proc.returncode:
            reason = err.decode(errors="replace").strip()[:500]
            raise ControllerError(
                f"The Slurm controller did not answer `{command}`: {reason or f'exit {proc.returncode}'}.",
                details={"command": command, "reason": reason, "exit_code": proc.returncode},
            )
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
