"""Machine queries: one machine, lists, status of several, health, active count."""

from pydantic import Field

from ..models import (
    ActiveMachineCount,
    CleanupResult,
    Machine,
    MachineHealth,
    MachineList,
    MachineStatus,
)
from ..models.identifiers import TemplateId
from ._base import Audit, Cli, Command, Policy, Query, Rest

__all__ = [
    "CleanupTerminatedMachinesCommand",
    "GetActiveMachineCountQuery",
    "GetMachineHealthQuery",
    "GetMachineQuery",
    "GetMachineStatusQuery",
    "ListMachinesQuery",
]

MACHINE_POLICY = Policy(
    object_type="machine", fields={"machineId": "machine_id"}, category="machines", stored="machine_id"
)


class GetMachineQuery(Query[Machine]):
    """Show one machine."""

    rest = Rest("GET", "/api/v1/machines/{machine_id}")
    cli = Cli("machines", "show", args=("machine_id",))
    policy = MACHINE_POLICY

    machine_id: str = Field(min_length=1)
    """Machine to show."""
    provider_name: str | None = None


class ListMachinesQuery(Query[MachineList]):
    """List machines, newest first."""

    rest = Rest("GET", "/api/v1/machines")
    cli = Cli("machines", "list")
    policy = Policy(object_type="machine", category="machines")

    status: MachineStatus | None = None
    """Only machines in this status."""
    template_id: TemplateId | None = None
    """Only machines from this template."""
    request_id: str | None = None
    """Only machines of this request."""
    active_only: bool = False
    """Only machines that exist at the provider (pending, running, stopping, stopped)."""
    limit: int = Field(50, ge=1, le=10000)
    offset: int = Field(0, ge=0, le=1_000_000_000)
    provider_name: str | None = None


class GetMachineStatusQuery(Query[MachineList]):
    """Status and address of several machines."""

    rest = Rest("GET", "/api/v1/machines/status")
    cli = Cli("machines", "status", args=("machine_ids",))
    policy = Policy(object_type="machine", category="machines")
    field_aliases = {"machine_ids": ("machine_id", "machineId")}

    machine_ids: list[str] = Field(min_length=1, max_length=1000)
    """Machines to read."""


class GetMachineHealthQuery(Query[MachineHealth]):
    """Health of one machine as its provider reports it."""

    rest = Rest("GET", "/api/v1/machines/{machine_id}/health")
    cli = Cli("machines", "health", args=("machine_id",))
    policy = MACHINE_POLICY

    machine_id: str = Field(min_length=1)


class GetActiveMachineCountQuery(Query[ActiveMachineCount]):
    """How many machines exist at the provider now, in total and per template."""

    rest = Rest("GET", "/api/v1/machines/count")
    cli = Cli("machines", "count")
    policy = Policy(object_type="machine", category="machines")

    template_id: TemplateId | None = None
    provider_name: str | None = None


class CleanupTerminatedMachinesCommand(Command[CleanupResult]):
    """Delete records of machines terminated or failed more than N days ago."""

    rest = Rest("POST", "/api/v1/machines/cleanup")
    cli = Cli("machines", "cleanup")
    policy = Policy(object_type="machine", category="machines", audit=Audit("machine"))
    output_fields = ("machines_cleaned",)

    older_than_days: float = Field(1, ge=0, le=36500)
    """Age threshold in days."""
    machines_cleaned: int | None = None
    """Output: how many machine records were deleted."""
