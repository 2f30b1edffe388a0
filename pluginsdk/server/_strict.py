"""JSON bodies are held to the types the OpenAPI document states.

Operations validate in pydantic's lax mode, which suits in-process callers, the CLI and query strings
(`"5"` for an integer, `0` for a boolean, one id where a list is expected). A JSON body is typed already, so
over REST a `0` where the document says boolean, or a string where it says array, is refused (400) instead
of coerced: each body is first checked against a strict (JSON-mode) model of the operation's body fields
with the same annotations. Values, required fields and unknown fields are the operation's own validation.
"""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
from pydantic import AliasChoices, ConfigDict, Field, TypeAdapter

from ..operations import OperationSpec
from ..operations._base import _alias_plan, validation_error

__all__ = ["check_body"]


_CHECKERS: dict[str, TypeAdapter[Any]] = {}


def _checker(spec: OperationSpec) -> TypeAdapter[Any]:
    found = _CHECKERS.get(spec.name)
    if found is None:
        found = _CHECKERS[spec.name] = _build(spec)
    return found


def _build(spec: OperationSpec) -> TypeAdapter[Any]:
    fields = spec.cls.model_fields
    assert spec.rest is not None
    if spec.rest.body_field is not None:
        f = fields[spec.rest.body_field]
        return TypeAdapter(_annotated(f.annotation, f.metadata), config=ConfigDict(strict=True))
    names = dict(_alias_plan(spec.cls)[0])
    definitions: dict[str, Any] = {}
    for name in spec.body_fields:
        f = fields[name]
        choices = names.get(name) or (name, pydantic.alias_generators.to_camel(name))
        alias = AliasChoices(*choices)
        definitions[name] = (_annotated(f.annotation, f.metadata) | None, Field(None, validation_alias=alias))
    model = pydantic.create_model(
        f"{spec.cls.__name__}JsonBody", __config__=ConfigDict(strict=True, extra="ignore"), **definitions
    )
    return TypeAdapter(model)


def _annotated(annotation: Any, metadata: list[Any]) -> Any:
    return Annotated[annotation, *metadata] if metadata else annotation


def check_body(spec: OperationSpec, raw: bytes) -> None:
    """Raise ValidationError (400) if a body value's JSON type is not the one its field states."""
    try:
        _checker(spec).validate_json(raw, strict=True)
    except pydantic.ValidationError as exc:
        raise validation_error(exc, spec.name) from None
