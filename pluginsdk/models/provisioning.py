"""Provisioning resources: templates, machines, requests, and their statuses.

Statuses are closed enums (`decisions.md`); the legal transitions live in one
table here so every backend enforces the same rules.
"""

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field

from ._base import BaseModel, utcnow

__all__ = [
    "MACHINE_TRANSITIONS",
    "REQUEST_TRANSITIONS",
    "Machine",
    "MachineStatus",
    "Request",
    "RequestStatus",
    "RequestType",
    "SkippedMachine",
    "Template",
    "can_transition",
]


class RequestStatus(StrEnum):
    """Lifecycle of a provisioning or return request."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    PARTIAL = "partial"
    """Terminal: finished, but some machines failed."""
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_REQUEST


class MachineStatus(StrEnum):
    """Lifecycle of one machine."""

    PENDING = "pending"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    SHUTTING_DOWN = "shutting-down"
    TERMINATED = "terminated"
    FAILED = "failed"

    @property
    def active(self) -> bool:
        """Counts against capacity: exists (or is coming up) at the provider."""
        return self in (MachineStatus.PENDING, MachineStatus.RUNNING, MachineStatus.STOPPING, MachineStatus.STOPPED)

    @property
    def gone(self) -> bool:
        return self in (MachineStatus.TERMINATED, MachineStatus.FAILED)


class RequestType(StrEnum):
    PROVISION = "provision"
    RETURN = "return"


_TERMINAL_REQUEST = frozenset(
    {RequestStatus.COMPLETED, RequestStatus.PARTIAL, RequestStatus.FAILED, RequestStatus.CANCELLED}
)

R = RequestStatus
REQUEST_TRANSITIONS: dict[RequestStatus, frozenset[RequestStatus]] = {
    R.PENDING: frozenset({R.RUNNING, R.COMPLETED, R.PARTIAL, R.FAILED, R.CANCELLED}),
    R.RUNNING: frozenset({R.COMPLETED, R.PARTIAL, R.FAILED, R.CANCELLED}),
    R.COMPLETED: frozenset(),
    R.PARTIAL: frozenset(),
    R.FAILED: frozenset(),
    R.CANCELLED: frozenset(),
}
"""Request status -> statuses it may move to. Terminal statuses move nowhere."""

M = MachineStatus
MACHINE_TRANSITIONS: dict[MachineStatus, frozenset[MachineStatus]] = {
    M.PENDING: frozenset({M.RUNNING, M.SHUTTING_DOWN, M.TERMINATED, M.FAILED, M.STOPPING}),
    M.RUNNING: frozenset({M.STOPPING, M.SHUTTING_DOWN, M.TERMINATED, M.FAILED}),
    M.STOPPING: frozenset({M.STOPPED, M.SHUTTING_DOWN, M.TERMINATED}),
    M.STOPPED: frozenset({M.PENDING, M.SHUTTING_DOWN, M.TERMINATED}),
    M.SHUTTING_DOWN: frozenset({M.TERMINATED}),
    M.TERMINATED: frozenset(),
    M.FAILED: frozenset({M.TERMINATED}),
}
"""Machine status -> statuses it may move to (a provider may skip intermediate states)."""
del R, M


def can_transition(current: RequestStatus | MachineStatus, new: RequestStatus | MachineStatus) -> bool:
    """True when `current -> new` is legal (staying put is always legal)."""
    if current == new:
        return True
    if isinstance(current, RequestStatus) and isinstance(new, RequestStatus):
        return new in REQUEST_TRANSITIONS[current]
    if isinstance(current, MachineStatus) and isinstance(new, MachineStatus):
        return new in MACHINE_TRANSITIONS[current]
    return False


class Template(BaseModel):
    """A recipe for machines: image, instance type, network and tags, for one provider API."""

    template_id: str
    """Unique id of the template."""
    name: str | None = None
    """Display name."""
    description: str | None = None
    """What the template is for."""
    provider_api: str = "aws"
    """Provider API that launches it (aws, RunInstances, EC2Fleet, SpotFleet, ASG, local)."""
    image_id: str
    """Machine image (AMI id for AWS)."""
    instance_type: str | None = None
    """Instance type, e.g. t3.medium."""
    instance_types: dict[str, float] = {}
    """Weighted set of instance types (type -> weight) for fleet APIs."""
    key_name: str | None = None
    """SSH key pair name."""
    security_group_ids: list[str] = []
    """Security groups attached to every machine."""
    subnet_ids: list[str] = []
    """Subnets; machines are spread across them."""
    user_data: str | None = None
    """Startup script text."""
    tags: dict[str, str] = {}
    """Tags put on every machine."""
    version: str = "1.0"
    """Template version."""
    max_number: int | None = None
    """Most machines one request may ask for (None: the global limit)."""
    price_type: str = "ondemand"
    """ondemand, spot or heterogeneous."""
    allocation_strategy: str | None = None
    """Fleet allocation strategy (lowestPrice, capacityOptimized, ...)."""
    fleet_type: str | None = None
    """Fleet kind: EC2Fleet instant (default), request or maintain; SpotFleet request (default) or maintain."""
    configuration: dict[str, Any] = {}
    """Further provider-specific settings."""
    source: str = "store"
    """Where the template came from: store, or the file it was loaded from."""
    created_at: datetime | None = None
    updated_at: datetime | None = None


class Machine(BaseModel):
    """One compute machine made for a request."""

    machine_id: str
    """Provider's id of the machine."""
    request_id: str
    """Provisioning request that made it."""
    template_id: str
    status: MachineStatus = MachineStatus.PENDING
    name: str | None = None
    """Host name."""
    ip_address: str | None = None
    """Private IP address."""
    public_ip_address: str | None = None
    instance_type: str | None = None
    provider_name: str = "local"
    provider_api: str | None = None
    return_request_id: str | None = None
    """Return request that is taking it back, if any."""
    status_reason: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    """Launch time."""
    updated_at: datetime = Field(default_factory=utcnow)


class Request(BaseModel):
    """A provisioning request (req-...) or return request (ret-...) and its machines."""

    request_id: str
    request_type: RequestType = RequestType.PROVISION
    status: RequestStatus = RequestStatus.PENDING
    template_id: str | None = None
    count: int = 0
    """Machines requested (requested_count)."""
    message: str = ""
    """Why the request is in its status (errors, cancel reason)."""
    provider_name: str = "local"
    provider_api: str | None = None
    dry_run: bool = False
    tags: dict[str, str] = {}
    machine_ids: list[str] = []
    """Machines of the request (for a return request: the machines being returned)."""
    machines: list[Machine] = []
    """Machine records (filled when the status is read with long=True)."""
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
    timeout: int = 3600
    created_by: str | None = None
    provider_data: dict[str, Any] = {}
    """Provider bookkeeping (fleet id, group name, ...) kept for reconciliation."""

    @property
    def id(self) -> str:
        return self.request_id


class SkippedMachine(BaseModel):
    """A machine a return request did not take, and why."""

    machine_id: str
    reason: str
