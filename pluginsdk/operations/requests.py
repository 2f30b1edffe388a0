"""Provisioning and return requests: create, read, list, cancel, sync, complete, clean up."""

import re
from typing import Annotated, Any, Self

from pydantic import Field, field_validator, model_validator

from ..constants import REQUEST_ID_PREFIX, RETURN_ID_PREFIX
from ..models import (
    CleanupResult,
    Request,
    RequestCreated,
    RequestList,
    RequestStatus,
    RequestStatusList,
    RequestSummary,
    ReturnRequestCreated,
    SkippedMachine,
)
from ..models.identifiers import TemplateId
from ._base import Audit, Cli, Command, Mcp, Policy, Query, Rest, utc_instant

__all__ = [
    "CancelRequestCommand",
    "CleanupAllResourcesCommand",
    "CleanupOldRequestsCommand",
    "CompleteRequestCommand",
    "CreateRequestCommand",
    "CreateReturnRequestCommand",
    "GetRequestQuery",
    "GetRequestStatusQuery",
    "GetRequestSummaryQuery",
    "ListActiveRequestsQuery",
    "ListRequestsQuery",
    "ListReturnRequestsQuery",
    "PopulateMachineIdsCommand",
    "SyncRequestCommand",
    "UpdateRequestStatusCommand",
]

_RETURN_ID = rf"^{RETURN_ID_PREFIX}[A-Za-z0-9-]{{1,64}}$"
"""A return request's id as a caller may choose it."""

_HOST_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
"""A host name label (RFC 1123): what a scheduler's node name must be to name a machine."""

_REQUEST_POLICY = Policy(
    object_type="request", fields={"requestId": "request_id"}, category="requests", stored="request_id"
)


class CreateRequestCommand(Command[RequestCreated]):
    """Request machines from a template.

    Idempotent on `request_id`: the same id again returns the first request.
    With `wait` it returns once the request is finished or `timeout` passes.
    """

    rest = Rest(
        "POST",
        "/api/v1/machines",
        status=202,
        alt_paths=("/api/v1/machines/request",),
        dry_run="dry_run",
        listing_b=("/api/v1/machines/request",),
        too_many="quota",
    )
    cli = Cli("machines", "request", args=("template_id", "requested_count"))
    mcp = Mcp(extra=("request_machines",), extra_names={"requested_count": "count"})
    policy = Policy(
        object_type="request",
        fields={"templateId": "template_id"},
        category="machines",
        rule="replay",
        audit=Audit("request", ("request_id",)),
    )
    output_fields = ("created_request_id",)

    template_id: TemplateId
    """Template to provision from."""
    requested_count: int = Field(ge=1, le=1_000_000)
    """How many machines (aliases: count, machine_count)."""
    timeout: int = Field(3600, ge=1, le=604800)
    """Seconds before the request gives up on machines not yet up."""
    request_id: str | None = Field(None, pattern=rf"^{REQUEST_ID_PREFIX}[A-Za-z0-9-]{{1,64}}$")
    """Pre-generated id (req-...) for idempotent retries."""
    tags: dict[str, str] = {}
    """Extra tags for the machines."""
    additional_data: dict[str, Any] = {}
    """Passed through to the request record."""
    machine_names: list[Annotated[str, Field(pattern=_HOST_NAME)]] = Field([], max_length=10_000)
    """Host names, one per machine in order (a scheduler's node names); empty: the provider names them."""
    wait: bool = False
    """Return only when the request is finished (or timeout passes)."""
    dry_run: bool = False
    """Say what would happen: nothing is recorded, the cloud provider is not touched."""
    created_request_id: str | None = None
    """Output: the id of the created request."""

    @model_validator(mode="after")
    def _one_name_each(self) -> Self:
        names = self.machine_names
        if names and (len(names) != self.requested_count or len(set(names)) != len(names)):
            raise ValueError("machine_names must name each requested machine once (requested_count distinct names)")
        return self


class CreateReturnRequestCommand(Command[ReturnRequestCreated]):
    """Return machines to the provider (terminate them)."""

    rest = Rest("POST", "/api/v1/machines/return")
    cli = Cli("machines", "return", args=("machine_ids",))
    mcp = Mcp(extra=("return_machines",))
    policy = Policy(
        object_type="machine",
        category="machines",
        rule="replay",
        audit=Audit("returnRequest", ("request_id", "created_request_ids")),
    )
    output_fields = ("created_request_ids", "processed_machines", "skipped_machines")

    machine_ids: list[str] = []
    """Machines to return."""
    force_return: bool = False
    """Return machines even while starting or their request is active."""
    return_all: bool = False
    """Return every active machine (needs force_return; destructive)."""
    timeout: int = Field(3600, ge=1, le=604800)
    """Seconds to wait for the provider to confirm termination."""
    from_request_id: str | None = Field(None, min_length=1, max_length=255)
    """Return the machines of this provisioning request (req-...), with any `machine_ids` given."""
    request_id: str | None = Field(None, pattern=_RETURN_ID)
    """Id of the return request this makes (ret-...): a retry does not return twice; not the provisioning
    request (`from_request_id`)."""
    dry_run: bool = False
    """Report what would be returned, change nothing."""
    created_request_ids: list[str] | None = None
    """Output: return request ids made."""
    processed_machines: list[str] | None = None
    """Output: machines being returned."""
    skipped_machines: list[SkippedMachine] | None = None
    """Output: machines not returned, with the reason."""

    @field_validator("machine_ids")
    @classmethod
    def _no_blank(cls, v: list[str]) -> list[str]:
        if any(not m.strip() for m in v):
            raise ValueError("machine ids must not be blank")
        return list(dict.fromkeys(v))

    @field_validator("request_id", mode="before")
    @classmethod
    def _a_return_id(cls, v: Any) -> Any:
        """A provisioning request's id here is the common mix-up: say what this field is, and which one to use."""
        if isinstance(v, str) and not re.fullmatch(_RETURN_ID, v):
            raise ValueError(
                f"request_id names the return request to make ({RETURN_ID_PREFIX} and 1-64 of letters, digits, -), "
                "for idempotent retries; to return the machines of a provisioning request, give its id as "
                "from_request_id"
            )
        return v


class CancelRequestCommand(Command[Request]):
    """Cancel a provisioning request; machines not yet running are terminated."""

    rest = Rest("DELETE", "/api/v1/requests/{request_id}", query=("reason", "force"))
    cli = Cli("requests", "cancel", args=("request_id",))
    policy = _REQUEST_POLICY._replace(audit=Audit("request", ("request_id",)))

    request_id: str = Field(min_length=1)
    """Request to cancel."""
    reason: str = ""
    """Why (kept on the request)."""
    force: bool = False
    """Also return machines that are already running."""


class UpdateRequestStatusCommand(Command[Request]):
    """Set a request's status by hand (only legal transitions)."""

    rest = Rest("PUT", "/api/v1/requests/{request_id}/status")
    cli = Cli("requests", "set-status", args=("request_id", "status"))
    policy = _REQUEST_POLICY._replace(audit=Audit("request", ("request_id",)))

    request_id: str = Field(min_length=1)
    status: RequestStatus
    """New status."""
    message: str = ""
    """Why."""


class SyncRequestCommand(Command[Request]):
    """Refresh a request and its machines from the provider now."""

    rest = Rest("POST", "/api/v1/requests/{request_id}/sync")
    cli = Cli("requests", "sync", args=("request_id",))
    policy = _REQUEST_POLICY._replace(audit=Audit("request", ("request_id",)))

    request_id: str = Field(min_length=1)


class CompleteRequestCommand(Command[Request]):
    """Mark a request finished with what it has (completed, or partial if machines failed)."""

    rest = Rest("POST", "/api/v1/requests/{request_id}/complete")
    cli = Cli("requests", "complete", args=("request_id",))
    policy = _REQUEST_POLICY._replace(audit=Audit("request", ("request_id",)))

    request_id: str = Field(min_length=1)
    message: str = ""


class PopulateMachineIdsCommand(Command[Request]):
    """Record machine ids the provider holds for a request (fleets that filled later, crash recovery)."""

    rest = Rest("POST", "/api/v1/requests/{request_id}/machine-ids")
    cli = Cli("requests", "populate-machines", args=("request_id",))
    policy = _REQUEST_POLICY._replace(audit=Audit("request", ("request_id",)))

    request_id: str = Field(min_length=1)


class CleanupOldRequestsCommand(Command[CleanupResult]):
    """Delete finished requests older than N days."""

    rest = Rest("POST", "/api/v1/requests/cleanup")
    cli = Cli("requests", "cleanup")
    policy = Policy(object_type="request", category="requests", audit=Audit("request"))
    output_fields = ("requests_cleaned", "request_ids_found")

    older_than_days: float = Field(1, ge=0, le=36500)
    """Age threshold in days."""
    statuses_to_cleanup: list[RequestStatus] = Field(
        default_factory=lambda: [
            RequestStatus.COMPLETED,
            RequestStatus.PARTIAL,
            RequestStatus.FAILED,
            RequestStatus.CANCELLED,
        ]
    )
    """Only requests in these statuses (active statuses are refused)."""
    dry_run: bool = False
    """Report what would be deleted."""
    requests_cleaned: int | None = None
    """Output: how many were deleted."""
    request_ids_found: list[str] | None = None
    """Output: which."""

    @field_validator("statuses_to_cleanup")
    @classmethod
    def _terminal_only(cls, v: list[RequestStatus]) -> list[RequestStatus]:
        active = [s.value for s in v if not s.terminal]
        if active:
            raise ValueError(f"active statuses cannot be cleaned up: {', '.join(active)}")
        return v


class CleanupAllResourcesCommand(Command[CleanupResult]):
    """Delete old finished requests and terminated machines in one go."""

    rest = Rest("POST", "/api/v1/cleanup")
    cli = Cli("system", "cleanup")
    policy = Policy(object_type="request", category="system", audit=Audit("request"))
    output_fields = ("requests_cleaned", "machines_cleaned", "total_cleaned")

    older_than_days: float = Field(1, ge=0, le=36500)
    """Age threshold in days."""
    include_pending: bool = False
    """Also fail and delete pending requests older than the threshold."""
    requests_cleaned: int | None = None
    machines_cleaned: int | None = None
    total_cleaned: int | None = None


class GetRequestQuery(Query[Request]):
    """Show a request's status and machines (shape follows the scheduler strategy)."""

    rest = Rest(
        "GET",
        "/api/v1/requests/{request_id}",
        alt_paths=("/api/v1/requests/{request_id}/status",),
        defaults={"long": True},
    )
    cli = Cli("requests", "show", args=("request_id",))
    policy = _REQUEST_POLICY

    request_id: str = Field(min_length=1)
    """Request to show."""
    long: bool = False
    """Include full machine records."""
    lightweight: bool = False
    """Read the store only; do not ask the provider."""
    provider_name: str | None = None


class GetRequestStatusQuery(Query[RequestStatusList]):
    """Status of one or more requests; one unknown id raises NotFoundError, unknown ids of a batch are reported."""

    rest = Rest("GET", "/api/v1/requests/status")
    cli = Cli("requests", "status", args=("request_ids",))
    mcp = Mcp(name="get_request_status", names={"request_ids": "request_id"})
    policy = Policy(object_type="request", category="requests")
    field_aliases = {"request_ids": ("request_id", "requestId")}

    request_ids: list[str] = Field(min_length=1, max_length=1000)
    """Requests to read (alias: request_id)."""
    long: bool = True
    """Include machine records."""
    report_missing: bool = False
    """Report a single unknown id in `not_found` instead of raising (the scheduler strategies' way)."""

    @field_validator("request_ids", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class ListRequestsQuery(Query[RequestList]):
    """List requests, newest first."""

    rest = Rest("GET", "/api/v1/requests")
    cli = Cli("requests", "list")
    policy = Policy(object_type="request", category="requests")

    status: RequestStatus | None = None
    """Only requests in this status."""
    template_id: TemplateId | None = None
    """Only requests for this template."""
    request_type: str | None = Field(None, pattern="^(provision|return)$")
    """provision or return."""
    limit: int = Field(50, ge=1, le=10000)
    offset: int = Field(0, ge=0, le=1_000_000_000)


class ListActiveRequestsQuery(Query[RequestList]):
    """List requests that are still pending or running."""

    rest = Rest("GET", "/api/v1/requests/active")
    cli = Cli("requests", "active")
    policy = Policy(object_type="request", category="requests")

    all_resources: bool = False
    """Include finished requests too."""
    limit: int = Field(50, ge=1, le=10000)
    offset: int = Field(0, ge=0, le=1_000_000_000)
    provider_name: str | None = None
    filter_expressions: list[str] = []
    """Filters like `template_id=web` or `status!=failed` (field, = or !=, value)."""
    as_of: str | None = Field(None, max_length=64)
    """The first page's `as_of`, for the next pages: they list what was active then (finished ones too)."""

    @field_validator("as_of")
    @classmethod
    def _instant(cls, value: str | None) -> str | None:
        """A time (UTC when it names no zone), normalised to fixed-width UTC."""
        return utc_instant(value)


class ListReturnRequestsQuery(Query[RequestList]):
    """List return requests and machines the cloud reclaimed (spot interruptions)."""

    rest = Rest("GET", "/api/v1/requests/return")
    cli = Cli("requests", "returns")
    policy = Policy(object_type="request", category="requests")

    machine_names: list[str] = []
    """Only return requests touching these machines (ids or host names)."""
    status: RequestStatus | None = None
    limit: int = Field(50, ge=1, le=10000)
    offset: int = Field(0, ge=0, le=1_000_000_000)
    provider_name: str | None = None


class GetRequestSummaryQuery(Query[RequestSummary]):
    """Counts of requests by status and type, and of machines by status."""

    rest = Rest("GET", "/api/v1/requests/summary")
    cli = Cli("requests", "summary")
    policy = Policy(object_type="request", category="requests")

    template_id: TemplateId | None = None
