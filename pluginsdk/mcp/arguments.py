"""Tool arguments checked against the tool's published `inputSchema` before the operation is built.

The schema is the contract a client sees, so the server accepts what it says and nothing more: a name it does
not list (`machine_count`, `templateId`) is an unknown field, a string where it says integer is a wrong type,
even where the operation model would have coerced or aliased it for other interfaces. The operation model
still validates afterwards (rules a schema cannot state). Errors name each field as the caller sent it and
never quote a value in the message (it may be a password).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from ..errors import ValidationError

__all__ = ["ArgumentCheck"]


def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterable[SchemaError]:
    """`pattern`, skipped where Python's `re` cannot read the regex (the operation model still enforces it)."""
    if not isinstance(instance, str):
        return
    try:
        found = re.search(pattern, instance)
    except re.error:
        return
    if found is None:
        yield SchemaError(f"does not match {pattern!r}")


_Validator: Any = jsonschema.validators.extend(Draft202012Validator, {"pattern": _pattern})  # type: ignore[no-untyped-call]

_NAME_LIMIT = 200
"""Characters of a field name a message quotes (error details clip theirs alike: `pluginsdk.errors`)."""

_ORDER = {"additionalProperties": 0, "required": 1}
"""Unknown fields first (the likeliest mistake: a name the schema does not list), then missing ones."""


class ArgumentCheck:
    """The input schema of one tool, compiled once; `check` raises the first problem as a ValidationError."""

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        self.tool = tool
        self.validator = _Validator(schema)

    def check(self, arguments: Mapping[str, Any]) -> None:
        problems = sorted(
            (p for error in self.validator.iter_errors(arguments) for p in _problems(error)),
            key=lambda p: _ORDER.get(p["type"], 2),  # stable: in the order the caller sent them
        )
        if not problems:
            return
        first = problems[0]
        fld = first["field"]
        named = fld  # a made-up name may be of any length: the message quotes its start
        if len(named) > _NAME_LIMIT:
            named = f"{fld[:_NAME_LIMIT]}... ({len(fld) - _NAME_LIMIT} more characters)"
        if first["type"] == "additionalProperties":
            known = ", ".join(self.validator.schema.get("properties", {})) or "none"
            message = f"Unknown field {named!r} for {self.tool}; its fields: {known}."
        elif first["type"] == "required":
            message = f"{named!r} is required for {self.tool}."
        else:
            message = f"Invalid value for {named!r} in {self.tool}: {first['message']}."
        value = first.pop("value", None)
        raise ValidationError(
            message,
            details={
                "field": fld,
                "value": value if isinstance(value, str | int | float | bool) else None,
                "expected": first["message"],
                "errors": [{k: p[k] for k in ("field", "message", "type")} for p in problems],
            },
        )


def _join(path: Iterable[Any], name: str | None = None) -> str:
    return ".".join([*(str(p) for p in path), *([name] if name is not None else [])]) or "input"


def _problems(error: SchemaError) -> list[dict[str, Any]]:
    """One entry per field `error` is about (one per missing or unknown name), message free of the value."""
    keyword = str(error.validator)
    rule: Any = error.validator_value
    instance: Any = error.instance
    if keyword == "required" and isinstance(instance, Mapping):
        return [_entry(_join(error.absolute_path, n), "is required", keyword) for n in rule if n not in instance]
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        return _unknown_fields(error, instance)
    if keyword in ("anyOf", "oneOf") and error.context:
        return _problems(_chosen(error))
    return [_entry(_join(error.absolute_path), _describe(keyword, rule), keyword, instance)]


def _unknown_fields(error: SchemaError, instance: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per name that is neither a declared property nor matches a pattern property."""
    schema: Any = error.schema if isinstance(error.schema, Mapping) else {}
    declared, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extra = [k for k in instance if k not in declared and not any(re.search(p, k) for p in patterns)]
    if extra:
        return [
            _entry(_join(error.absolute_path, k), "is not a field of this tool", "additionalProperties") for k in extra
        ]
    return [_entry(_join(error.absolute_path), "has a value of the wrong shape", "additionalProperties")]


def _chosen(error: SchemaError) -> SchemaError:
    """Of an `anyOf`'s failed branches, the one that is not the bare `null` alternative (what was meant): the
    one whose type the value has, deepest into it (a list of ids with one bad item: that item, not "should
    be a string")."""
    context = list(error.context or ())
    meant = [e for e in context if not (e.validator == "type" and e.validator_value == "null")]
    return max(meant or context, key=lambda e: (len(e.absolute_path), e.validator != "type"))


def _entry(fld: str, message: str, keyword: str, value: Any = None) -> dict[str, Any]:
    return {"field": fld, "message": message, "type": keyword, "value": value}


_PHRASES = {
    "minimum": "should be >= {}",
    "maximum": "should be <= {}",
    "exclusiveMinimum": "should be > {}",
    "exclusiveMaximum": "should be < {}",
    "minLength": "should have at least {} characters",
    "maxLength": "should have at most {} characters",
    "minItems": "should have at least {} items",
    "maxItems": "should have at most {} items",
    "minProperties": "should have at least {} entries",
    "maxProperties": "should have at most {} entries",
    "multipleOf": "should be a multiple of {}",
    "format": "should be a {} value",
}


def _describe(keyword: str, rule: Any) -> str:
    """The rule in words, without the rejected value (jsonschema's own messages quote it)."""
    if keyword == "type":
        kinds = rule if isinstance(rule, list) else [rule]
        return "should be of type " + " or ".join(str(k) for k in kinds)
    if keyword == "enum":
        return "should be one of " + ", ".join(repr(v) for v in rule)
    if keyword == "const":
        return f"should be {rule!r}"
    if keyword == "pattern":
        return f"should match the pattern {rule!r}"
    if keyword == "uniqueItems":
        return "should have no repeated items"
    phrase = _PHRASES.get(keyword)
    return phrase.format(rule) if phrase else f"breaks the schema's {keyword!r} rule"
