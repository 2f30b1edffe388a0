"""Provisioning resources: machines and requests (their statuses live in `statuses`)."""

from datetime import datetime
from typing import Any

from pydantic import Field

from ._base import BaseModel, utcnow
from .statuses import MachineStatus, RequestStatus, RequestType

__all__ = ["Machine", "Request", "SkippedMachine"]


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
