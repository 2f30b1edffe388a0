"""The one BaseModel every pluginsdk data object derives from.

Inputs accept snake_case or camelCase; output is snake_case unless a caller
asks for aliases. `to_dict()`/`to_json()`, a compact `str()` and the notebook
displays (`_display.Display`) make objects pleasant in notebooks and logs.
"""

import json
from datetime import UTC, datetime
from typing import Any

import pydantic
from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from ._display import Display

__all__ = ["BaseModel", "utcnow"]


def utcnow() -> datetime:
    """Timezone-aware now, truncated to microseconds (what the store keeps)."""
    return datetime.now(UTC)


class BaseModel(Display, pydantic.BaseModel):
    """Data object: snake_case or camelCase in, snake_case out, extra input fields ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        extra="ignore",
        use_attribute_docstrings=False,
        defer_build=True,
        validate_by_name=True,
        validate_by_alias=True,
    )

    def to_dict(self, *, by_alias: bool = False, exclude_none: bool = False) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601 strings)."""
        return self.model_dump(mode="json", by_alias=by_alias, exclude_none=exclude_none)

    def to_json(self, *, indent: int | None = 2, by_alias: bool = False) -> str:
        """The object as JSON text, indented for people by default."""
        return json.dumps(self.to_dict(by_alias=by_alias), indent=indent)
