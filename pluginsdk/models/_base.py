"""The one BaseModel every pluginsdk data object derives from.

Inputs accept snake_case or camelCase; output is snake_case unless a caller
asks for aliases. `to_dict()`/`to_json()`, a compact `str()` and the notebook
displays (`_display.Display`) make objects pleasant in notebooks and logs.
"""

import json
import re
from datetime import UTC, datetime
from typing import Any, Self

import pydantic
from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from ._display import Display
from .values import value_problem

__all__ = ["BaseModel", "utcnow"]


def _log() -> Any:
    """The models' logger, imported only when a stored row needs a warning (CLI cold start)."""
    import logging

    return logging.getLogger("pluginsdk.models")


def _top_fields(exc: pydantic.ValidationError) -> set[str]:
    """The top-level fields a validation error is about."""
    return {str(e["loc"][0]) for e in exc.errors(include_url=False) if e["loc"]}


def utcnow() -> datetime:
    """Timezone-aware now, truncated to microseconds (what the store keeps)."""
    return datetime.now(UTC)


class BaseModel(Display, pydantic.BaseModel):
    """Data object: snake_case or camelCase in, snake_case out, extra input fields ignored, floats finite
    (NaN and infinity are not JSON numbers: a model never holds one it could not write back)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        extra="ignore",
        use_attribute_docstrings=False,
        defer_build=True,
        allow_inf_nan=False,
        validate_by_name=True,
        validate_by_alias=True,
    )

    @classmethod
    def from_stored(cls, data: str | bytes, *, key: str = "?") -> Self | None:
        """A stored row's JSON as a model, robust to rows an older version or a hand edit left invalid.

        A field that does not validate, or holds what no JSON encoder or store takes (`pluginsdk.models.values`:
        a NaN or a lone surrogate in a free-form mapping), is dropped so its default applies, and logged; a row
        that still does not validate is logged and skipped (None). One bad row thereby never makes a listing
        fail for every user, and the object stays readable, fixable and deletable. The log names the model,
        the row's key and the fields, never their values.
        """
        dropped: set[str] = set()
        try:
            model = cls.model_validate_json(data)
        except pydantic.ValidationError as exc:
            dropped = _top_fields(exc)
        else:
            if value_problem(model) is None:
                return model
        try:
            raw = json.loads(data)  # Python's parser also reads NaN and Infinity tokens
        except ValueError:
            raw = None
        if isinstance(raw, dict):
            for _ in range(len(raw) + 1):
                kept = {k: v for k, v in raw.items() if k not in dropped and to_camel(k) not in dropped}
                try:
                    model = cls.model_validate(kept)
                except pydantic.ValidationError as exc:
                    more = _top_fields(exc) - dropped
                    if not more:
                        break
                    dropped |= more
                    continue
                found = value_problem(model)
                if found is None:
                    _log().warning(
                        "stored %s %r: field(s) %s do not validate; shown with their defaults until rewritten",
                        cls.__name__,
                        key,
                        ", ".join(sorted(dropped)),
                    )
                    return model
                dropped.add(re.split(r"[.\[]", found[0], maxsplit=1)[0])
        _log().warning(
            "stored %s %r does not validate (fields: %s); skipped", cls.__name__, key, ", ".join(sorted(dropped))
        )
        return None

    def to_dict(self, *, by_alias: bool = False, exclude_none: bool = False) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601 strings)."""
        return self.model_dump(mode="json", by_alias=by_alias, exclude_none=exclude_none)

    def to_json(self, *, indent: int | None = 2, by_alias: bool = False) -> str:
        """The object as JSON text, indented for people by default."""
        return json.dumps(self.to_dict(by_alias=by_alias), indent=indent)
