"""The contract between the engine and a cloud provider driver.

The engine owns the store and the state machine; a driver only talks to its
cloud. Every machine a driver makes carries the request id (AWS: the tag
`pluginsdk:request-id`), so `describe()` can find machines the store never
heard of (the engine died mid-launch) and reconciliation loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the engine loads this module before it knows which models a call needs
    from pluginsdk.models import Machine, MachineStatus, Request, Template

__all__ = [
    "CAPACITY_CODES",
    "REQUEST_TAG",
    "LaunchResult",
    "ProviderDriver",
    "ProvisionedMachine",
]

REQUEST_TAG = "pluginsdk:request-id"
"""Tag (label) every provider puts on what it creates for a request."""

CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "InsufficientHostCapacity",
        "Unsupported",
        "MaxSpotInstanceCountExceeded",
        "UnfulfillableCapacity",
        "capacity-not-available",
        "capacity-oversubscribed",
    }
)
"""Provider codes (`ProviderError.details["provider_code"]`) that mean "no capacity for this candidate now":
EC2's insufficient-capacity errors, a type not offered in the zone, the spot limits and spot request states.
The engine falls back to the next candidate on them and cools the failed one down."""


def capacity_code(text: str | None) -> bool:
    """Whether a provider code, or a reason that starts with one (`InsufficientInstanceCapacity: ...`), says
    there is no capacity."""
    return bool(text) and str(text).split(":", 1)[0].strip() in CAPACITY_CODES


@dataclass(slots=True)
class ProvisionedMachine:
    """A machine as the provider sees it right now."""

    machine_id: str
    status: MachineStatus
    name: str | None = None
    ip_address: str | None = None
    public_ip_address: str | None = None
    instance_type: str | None = None
    launched_at: datetime | None = None
    reason: str | None = None
    """Why it failed or went away (spot interruption, capacity, ...)."""
    ready: bool = False
    """The provider knows the machine finished its startup (a readiness signal, docs/providers.md)."""


@dataclass(slots=True)
class LaunchResult:
    """What a launch call started. Machines may be empty for fleets that fill later."""

    machines: list[ProvisionedMachine] = field(default_factory=list)
    provider_data: dict[str, Any] = field(default_factory=dict)
    """Stored on the request (fleet id, ASG name, ...) and handed back to describe/terminate."""
    message: str = ""


@runtime_checkable
class ProviderDriver(Protocol):
    """A provider driver. Constructed with its config group; async-started once per engine."""

    name: str
    """Provider instance name (e.g. local, aws)."""
    apis: tuple[str, ...]
    """provider_api values it serves; a template whose provider_api is not here is rejected."""

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def launch(self, request: Request, template: Template, count: int) -> LaunchResult:
        """Start `count` machines for `request`, tagged with its id. Raises ProviderError."""
        ...

    async def describe(self, request: Request, template: Template | None) -> list[ProvisionedMachine]:
        """Every machine the provider holds for this request (found by its tag), in its current state."""
        ...

    async def terminate(self, request: Request, machines: Sequence[Machine]) -> dict[str, MachineStatus]:
        """Take machines of one provisioning request back (shrinking its fleet/group so none is replaced)."""
        ...

    async def reclaimed(self) -> list[ProvisionedMachine]:
        """Machines the cloud took back on its own since they were made (spot interruptions)."""
        ...

    async def health(self) -> dict[str, Any]:
        """{"healthy": bool, ...details}; never raises for an unhealthy provider."""
        ...
