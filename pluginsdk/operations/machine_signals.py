"""What a machine says about itself: its readiness signal (docs/providers.md).

A module of its own, so its tool is in the `machine` MCP profile rather than in an assistant's default one.
"""

from pydantic import Field

from ..models import MachineReady
from ._base import Audit, Cli, Command, Rest
from .machines import MACHINE_POLICY

__all__ = ["MarkMachineReadyCommand"]


class MarkMachineReadyCommand(Command[MachineReady]):
    """Report that a machine finished its startup (its startup script calls this)."""

    rest = Rest("POST", "/api/v1/machines/{machine_id}/ready")
    cli = Cli("machines", "ready", args=("machine_id",))
    policy = MACHINE_POLICY._replace(audit=Audit("machine", ("machine_id",)))

    machine_id: str = Field(min_length=1, max_length=255)
