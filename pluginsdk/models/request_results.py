"""Result objects of the request operations (provisioning, return, status, cleanup)."""

from pydantic import Field

from .provisioning import Machine, Request, SkippedMachine
from .results import Result

__all__ = [
    "CleanupResult",
    "RequestCreated",
    "RequestList",
    "RequestStatusList",
    "RequestSummary",
    "ReturnRequestCreated",
]


class RequestCreated(Result):
    """Answer of a provisioning request: its id (also as `.id`), status and machines."""

    request_id: str | None = None
    """The request's id; None for a dry run (nothing was recorded: there is no request to read later)."""
    status: str = "submitted"
    machines: list[Machine] = []
    dry_run: bool = False

    @property
    def id(self) -> str | None:
        return self.request_id

    @property
    def created_request_id(self) -> str | None:
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
    as_of: str | None = Field(None, exclude_if=lambda v: v is None)
    """The active listing's view: the requests active at this time (pass it back as `as_of` for the next
    pages; docs/rest.md). Other listings leave it out."""

    def page_items(self) -> list[Request]:
        return self.requests


class RequestStatusList(Result):
    """Several requests by id; ids that do not exist are listed in `not_found`, not raised."""

    requests: list[Request] = []
    not_found: list[str] = []


class RequestSummary(Result):
    total_requests: int = 0
    by_status: dict[str, int] = {}
    by_type: dict[str, int] = {}
    machines_by_status: dict[str, int] = {}


class CleanupResult(Result):
    requests_cleaned: int = 0
    request_ids_found: list[str] = []
    machines_cleaned: int = 0
    total_cleaned: int = 0
