"""Result objects of the machine operations."""

from typing import Any

from .provisioning import Machine
from .results import Result

__all__ = ["ActiveMachineCount", "MachineHealth", "MachineList", "MachineReady", "MachineResult"]


class MachineResult(Result):
    machine: Machine


class MachineList(Result):
    machines: list[Machine] = []
    total_count: int = 0

    def page_items(self) -> list[Machine]:
        return self.machines


class MachineHealth(Result):
    machine_id: str
    status: str
    healthy: bool
    checks: dict[str, Any] = {}


class ActiveMachineCount(Result):
    count: int = 0
    by_template: dict[str, int] = {}


class MachineReady(Result):
    machine_id: str
    request_status: str
