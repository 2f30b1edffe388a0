"""The audit log: who changed which constraint, role, user role, API key or managed user, when, and how.

Read-only: records are written by the engine as changes happen and cannot be changed through the API.
"""

from pydantic import Field, field_validator

from ..models.policy_results import AuditPage
from ._base import Cli, Policy, Query, Rest, utc_instant

__all__ = ["ListAuditRecordsQuery"]


class ListAuditRecordsQuery(Query[AuditPage]):
    """List audit records (oldest first) with filters and paging; `jsonl` also returns the page as JSON lines."""

    rest = Rest("GET", "/auth/audit", camel=True)
    cli = Cli("auth", "audit")
    policy = Policy(category="audit")

    actor: str | None = Field(None, max_length=256)
    """Only changes made by this user id."""
    action: str | None = Field(None, max_length=64)
    """Only this operation (create_constraint, delete_api_key, ..., or `decision`)."""
    target_type: str | None = Field(None, pattern=r"^(constraint|role|userRole|apiKey|managedUser|[A-Za-z]{1,32})$")
    """One of "constraint", "role", "userRole", "apiKey", "managedUser", "template", "request", "returnRequest",
    "machine" (decisions: their object type)."""
    target_id: str | None = Field(None, max_length=1024)
    """Only records about this id."""
    since: str | None = Field(None, max_length=64)
    """Only records at or after this time (ISO 8601)."""
    until: str | None = Field(None, max_length=64)
    """Only records before this time (ISO 8601)."""
    min_revision: int | None = Field(None, ge=0)
    """Only records at or after this policy revision."""
    page_size: int = Field(100, ge=1, le=1000)
    """Records per page (1-1000)."""
    starting_token: str | None = Field(None, max_length=2048)
    """NextToken of the previous page, unmodified."""
    jsonl: bool = False
    """Also return the page as JSON lines (one record per line) for export."""

    @field_validator("since", "until")
    @classmethod
    def _instant(cls, value: str | None) -> str | None:
        """Normalised to the store's fixed-width UTC form (so the text comparison is a time comparison)."""
        return utc_instant(value)
