"""Compact JSON schemas for `tools/list`: the same rules in fewer bytes, so the listing fits an assistant's context.

pydantic's schemas carry what a tool list does not need: a `title` on every property (the name, re-spelt),
`anyOf: [X, {"type": "null"}]` for every optional field, `"default": null` on each of them, and in output
schemas the models' docstrings and serialization defaults. `compact` drops or folds those; every rule a value
must meet (types, bounds, patterns, formats, enums, required, additionalProperties: false) stays, so what
validated before validates now, and what failed still fails. Nested models stay in the schema's own `$defs`,
referenced where used, as pydantic writes them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compact"]

_NAMED_SCHEMAS = ("properties", "$defs", "patternProperties", "dependentSchemas")
"""Keywords whose value maps names (not keywords) to schemas: their keys are never dropped."""

_LITERALS = ("default", "const", "enum", "examples")
"""Keywords whose value is data, copied as it is."""

_NULL = {"type": "null"}

_NOT_FOLDED = ("$ref", "anyOf", "oneOf", "allOf", "not", "enum", "const")
"""A branch with one of these says more than its `type`; `null` would not pass it, so it is not folded."""


def compact(schema: dict[str, Any], *, output: bool) -> dict[str, Any]:
    """`schema` without titles, null defaults and one-branch-or-null `anyOf`s (a new dict).

    For an output schema, descriptions, defaults and `additionalProperties: true` go too: the result is data
    the caller already has, and its schema only has to say what shape it takes.
    """
    drop = {"title", "description", "default", "examples"} if output else {"title"}
    out: dict[str, Any] = _node(schema, drop)
    if not output:
        out.pop("description", None)  # the operation's docstring: the tool's description says it already
    if not out.get("required", True):
        out.pop("required")
    return out


def _node(node: Any, drop: set[str]) -> Any:
    if isinstance(node, list):
        return [_node(item, drop) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in drop or (key == "default" and value is None) or (key == "additionalProperties" and value is True):
            continue
        if key in _LITERALS:
            out[key] = value
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {name: _node(sub, drop) for name, sub in value.items()}
        else:
            out[key] = _node(value, drop)
    return _fold_nullable(out)


def _fold_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": T, ...}, {"type": "null"}]}` -> `{"type": [T, "null"], ...}` where that says the same.

    Only for a branch with one plain type and no `$ref`/combinators: its other keywords (bounds, pattern,
    format, items) apply to values of that type alone, so they hold unchanged for the folded form, and
    `null` passes them all. A `$ref` branch (an enum or a model) keeps its `anyOf`.
    """
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or _NULL not in branches:
        return node
    (other,) = [b for b in branches if b != _NULL]
    kind = other.get("type") if isinstance(other, dict) else None
    if not isinstance(kind, str) or kind == "null" or any(k in other for k in _NOT_FOLDED):
        return node
    folded = {k: v for k, v in node.items() if k != "anyOf"}
    if set(folded) & set(other):
        return node
    return {**folded, **other, "type": [kind, "null"]}
