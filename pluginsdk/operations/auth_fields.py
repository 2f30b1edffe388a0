"""Field types and helpers shared by the auth-service operations (no operations here).

The identifier types themselves (`UserId`, `RoleName`, ...) live in `pluginsdk.models.identifiers`, beside
the constraint rules that use them too; they are re-exported here for the operations.
"""

from datetime import UTC, date, datetime, time
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, StringConstraints, WithJsonSchema
from pydantic_core import PydanticCustomError

from ..models.identifiers import ROLE_NAME_PATTERN, USER_ID_PATTERN, ApiKeyName, RoleName, UserId, identifier_problem
from ._base import Operation, R_co

__all__ = [
    "ROLE_NAME_PATTERN",
    "USER_ID_PATTERN",
    "ApiKeyName",
    "Description",
    "Expiry",
    "PartialUpdate",
    "RoleName",
    "Sensitive",
    "UserId",
    "check_expiry",
    "check_role_names",
    "strip_spaces",
    "strip_text",
]

Description = Annotated[str, StringConstraints(strip_whitespace=True, min_length=4, max_length=256)]
"""Free text: surrounding whitespace removed, then 4-256 characters."""


def strip_text(value: Any) -> Any:
    """Before-validator: remove surrounding whitespace from text (length checks then see the trimmed value)."""
    return value.strip() if isinstance(value, str) else value


def strip_spaces(value: Any) -> Any:
    """Before-validator of names: remove surrounding spaces only (a newline or tab is refused, not trimmed)."""
    return value.strip(" ") if isinstance(value, str) else value


def check_role_names(names: list[str]) -> list[str]:
    """Validate each role name (the `RoleName` set) and drop repeats (order kept)."""
    for i, n in enumerate(names):
        problem = identifier_problem("role name", n)
        if problem is not None:
            raise PydanticCustomError("identifier", "role name [{index}]: {problem}", {"index": i, "problem": problem})
    return list(dict.fromkeys(names))


def check_expiry(value: str) -> str:
    """After-validator of `Expiry`: the text must name an instant that exists in UTC.

    The handler reads the value (date alone: end of that day, UTC; a time needs its zone); this check only
    makes sure that reading cannot overflow: `9999-12-31T23:59:59-14:00` is after year 9999 in UTC, and
    `0001-01-01T00:00:00+01:00` before year 1, so neither is a date any store or client can hold.
    """
    text = value.strip()
    if len(text) > 64:
        raise PydanticCustomError("expiry", "an ISO 8601 date-time is at most 64 characters")
    try:
        if len(text) == 10:
            datetime.combine(date.fromisoformat(text), time.max, tzinfo=UTC)
            return value
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise PydanticCustomError(
            "expiry", "must be an ISO 8601 date-time with a time zone (2030-01-31T12:00:00Z) or a date (2030-01-31)"
        ) from None
    if moment.utcoffset() is not None:
        try:
            moment.astimezone(UTC)
        except OverflowError:
            raise PydanticCustomError(
                "expiry", "date out of range: in UTC it is not between years 1 and 9999"
            ) from None
    return value


Expiry = Annotated[
    str,
    AfterValidator(check_expiry),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time", "maxLength": 64},
                {"type": "string", "format": "date", "maxLength": 10},
            ]
        },
        mode="validation",
    ),
]
"""An expiry: ISO 8601 with a time zone, or a date alone; in range once converted to UTC."""


class PartialUpdate(Operation[R_co]):
    """An update whose omitted fields keep their stored value: only fields actually given travel."""


class Sensitive(Operation[R_co]):
    """An operation carrying secrets (passwords, tokens): they never show in str() or repr()."""

    secret_fields: ClassVar[tuple[str, ...]] = ()

    def _masked(self) -> str:
        shown = {k: ("***" if k in self.secret_fields and v else v) for k, v in self.to_dict().items()}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items() if v is not None)})"

    def __str__(self) -> str:
        return self._masked()

    def __repr__(self) -> str:
        return self._masked()
