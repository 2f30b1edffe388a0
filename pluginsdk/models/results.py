"""Result objects of the provisioning operations.

Each result *is* the wire shape: REST, CLI (default strategy) and MCP render it
as it is, so the interfaces never re-wrap per operation. `success`, `message`
and `timestamp` are the envelope keys the spec names.
"""

from datetime import datetime
from typing import Any

from pydantic import Field

from ._base import BaseModel, utcnow
from .provisioning import Machine, Request, SkippedMachine, Template

__all__ = [
    "ActiveMachineCount",
    "CleanupResult",
    "ConfigurationView",
    "MachineHealth",
    "MachineList",
    "MachineResult",
    "Metrics",
    "ProviderHealth",
    "ProviderInfo",
    "ProviderList",
    "RequestCreated",
    "RequestList",
    "RequestStatusList",
    "RequestSummary",
    "Result",
    "ReturnRequestCreated",
    "SystemStatus",
    "TemplateList",
    "TemplateRefresh",
    "TemplateResult",
    "TemplateValidation",
    "TemplateWritten",
]


class Result(BaseModel):
    """Envelope keys shared by every result."""

    success: bool = True
    message: str = ""
    timestamp: datetime = Field(default_factory=utcnow)


class TemplateList(Result):
    templates: list[Template] = []
    total_count: int = 0


class TemplateResult(Result):
    template: Template


class TemplateWritten(Result):
    """Answer of create, update and delete template."""

    template_id: str


class TemplateValidation(Result):
    valid: bool
    template_id: str | None = None
    validation_errors: list[str] = []
    validation_warnings: list[str] = []


class TemplateRefresh(Result):
    template_count: int = 0
    cache_stats: dict[str, int] = {}
    """cache_hits, cache_misses, files_loaded."""


class RequestCreated(Result):
    """Answer of a provisioning request: its id (also as `.id`), status and machines."""

    request_id: str
    status: str = "submitted"
    machines: list[Machine] = []
    dry_run: bool = False

    @property
    def id(self) -> str:
        return self.request_id

    @property
    def created_request_id(self) -> str:
        """The command output field of the spec (same as `request_id`)."""
        return self.request_id


class ReturnRequestCreated(Result):
    request_id: str | None = None
    """The return request (None when every machine was skipped)."""
    created_request_ids: list[str] = []
    processed_machines: list[str] = []
    skipped_machines: list[SkippedMachine] = []

    @property
    def id(self) -> str | None:
        return self.request_id


class RequestList(Result):
    requests: list[Request] = []
    total_count: int = 0


class RequestStatusList(Result):
    """Several requests by id; ids that do not exist are listed in `not_found`, not raised."""

    requests: list[Request] = []
    not_found: list[str] = []


class SystemStatus(Result):
    version: str
    backend: str
    provider: str
    storage: str
    scheduler: str
    requests_by_status: dict[str, int] = {}
    active_machines: int = 0


class Metrics(Result):
    counters: dict[str, float] = {}


class RequestSummary(Result):
    total_requests: int = 0
    by_status: dict[str, int] = {}
    by_type: dict[str, int] = {}
    machines_by_status: dict[str, int] = {}


class MachineResult(Result):
    machine: Machine


class MachineList(Result):
    machines: list[Machine] = []
    total_count: int = 0


class MachineHealth(Result):
    machine_id: str
    status: str
    healthy: bool
    checks: dict[str, Any] = {}


class ActiveMachineCount(Result):
    count: int = 0
    by_template: dict[str, int] = {}


class CleanupResult(Result):
    requests_cleaned: int = 0
    request_ids_found: list[str] = []
    machines_cleaned: int = 0
    total_cleaned: int = 0


class ConfigurationView(Result):
    """The effective configuration, secrets redacted, with where each group came from."""

    configuration: dict[str, Any] = {}
    sources: dict[str, str] = {}


class ProviderInfo(BaseModel):
    name: str
    type: str
    apis: list[str] = []
    default: bool = False


class ProviderList(Result):
    providers: list[ProviderInfo] = []


class ProviderHealth(Result):
    provider_name: str
    healthy: bool
    details: dict[str, Any] = {}
