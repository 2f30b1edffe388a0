"""The envelope every operation result shares.

Each result *is* the wire shape: REST, CLI (default strategy) and MCP render it
as it is, so the interfaces never re-wrap per operation. `success`, `message`
and `timestamp` are the envelope keys the spec names. The results themselves
live beside it, one module per operation group (`template_results`,
`request_results`, ...), so a call builds only its own group's classes.
"""

from datetime import datetime

from pydantic import Field

from ._base import BaseModel, utcnow

__all__ = ["Result"]


class Result(BaseModel):
    """Envelope keys shared by every result."""

    success: bool = True
    message: str = ""
    timestamp: datetime = Field(default_factory=utcnow)
    revision: int | None = Field(None, exclude_if=lambda v: v is None)
    """Policy writes: the policy revision the write produced (ask a check for `at_least_revision`)."""
