"""Field types and helpers shared by the auth-service operations (no operations here)."""

import re
from typing import Annotated, Any, ClassVar

from pydantic import StringConstraints

from ._base import Operation

__all__ = [
    "ROLE_NAME_PATTERN",
    "USER_ID_PATTERN",
    "Description",
    "PartialUpdate",
    "RoleName",
    "Sensitive",
    "UserId",
    "check_role_names",
    "strip_text",
]

USER_ID_PATTERN = r"^[A-Za-z0-9_\-\.\+\@]{3,256}$"
"""The spec's userId pattern with `\\w` read as in ECMAScript: ASCII letters, digits and `_`."""

UserId = Annotated[str, StringConstraints(pattern=USER_ID_PATTERN)]
"""A user identifier: 3-256 of letters, digits, `_ - . + @`."""

ROLE_NAME_PATTERN = r"^[A-Za-z0-9_.\- ]{1,64}$"

RoleName = Annotated[str, StringConstraints(pattern=ROLE_NAME_PATTERN)]
"""A role name: 1-64 of letters, digits, `- _ .` and space."""

Description = Annotated[str, StringConstraints(strip_whitespace=True, min_length=4, max_length=256)]
"""Free text: surrounding whitespace removed, then 4-256 characters."""


def strip_text(value: Any) -> Any:
    """Before-validator: remove surrounding whitespace from text (length checks then see the trimmed value)."""
    return value.strip() if isinstance(value, str) else value


def check_role_names(names: list[str]) -> list[str]:
    """Validate each role name and drop repeats (order kept)."""
    for n in names:
        if not re.fullmatch(ROLE_NAME_PATTERN, n):
            raise ValueError(f"role name {n!r} must be 1-64 of letters, digits, '-', '_', '.', space")
    return list(dict.fromkeys(names))


class PartialUpdate(Operation):
    """An update whose omitted fields keep their stored value: only fields actually given travel."""

    def input_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude=set(self.output_fields), exclude_unset=True)


class Sensitive(Operation):
    """An operation carrying secrets (passwords, tokens): they never show in str() or repr()."""

    secret_fields: ClassVar[tuple[str, ...]] = ()

    def _masked(self) -> str:
        shown = {k: ("***" if k in self.secret_fields and v else v) for k, v in self.to_dict().items()}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items() if v is not None)})"

    def __str__(self) -> str:
        return self._masked()

    def __repr__(self) -> str:
        return self._masked()
