"""Compact JSON schemas for `tools/list`: the same rules in fewer bytes, so the listing fits an assistant's context.

pydantic's schemas carry what a tool list does not need: a `title` on every property (the name, re-spelt),
`anyOf: [X, {"type": "null"}]` for every optional field, `"default": null` on each of them, in output
schemas the models' docstrings and serialization defaults, and a `$defs` entry (name, reference) for every
nested model or enum even when it is used once. `compact` drops or folds those; every rule a value must meet
(types, bounds, patterns, formats, enums, required, additionalProperties: false) stays, so what validated
before validates now, and what failed still fails. A definition used in two places or more stays shared in
the schema's own `$defs`; one used once is written where it is used.
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
    out: dict[str, Any] = _inline_single_use(_node(schema, drop))
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


def _inline_single_use(schema: dict[str, Any]) -> dict[str, Any]:
    """Each `$defs` entry referenced exactly once (and not from itself) written in place of its `$ref`; unused
    entries dropped.

    Repeated until nothing changes, so a definition used once inside another used once goes too. A `$ref`
    with sibling keywords that the definition also has keeps its reference.
    """
    defs = dict(schema.get("$defs") or {})
    while defs:
        counts = {name: 0 for name in defs}
        _count_refs(schema, counts)
        if 0 in counts.values():  # unused: dropped
            defs = {k: v for k, v in defs.items() if counts[k]}
            schema = _with_defs(schema, defs)
            continue
        step = _inline_once(schema, defs, counts)
        if step is None:
            break
        schema, defs = step
    return schema


def _with_defs(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """`schema` with `defs` as its `$defs` (none when empty)."""
    body = {k: v for k, v in schema.items() if k != "$defs"}
    return {**body, "$defs": defs} if defs else body


def _inline_once(
    schema: dict[str, Any], defs: dict[str, Any], counts: dict[str, int]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Inline every definition used once: the new schema and `$defs`, or None when none could move."""
    single = {
        name
        for name, n in counts.items()
        if n == 1 and isinstance(defs[name], dict) and not _refers_to(defs[name], name)
    }
    if not single:
        return None
    inlined = _replace_refs(_with_defs(schema, defs), {k: defs[k] for k in single})
    left = {name: 0 for name in single}
    _count_refs(inlined, left)  # a use whose siblings clash with its definition kept its reference
    moved = {name for name, n in left.items() if n == 0}
    if not moved:
        return None
    defs = {k: v for k, v in inlined.pop("$defs").items() if k not in moved}
    return _with_defs(inlined, defs), defs


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    return ref[len("#/$defs/") :] if isinstance(ref, str) and ref.startswith("#/$defs/") else None


def _count_refs(node: Any, counts: dict[str, int]) -> None:
    if isinstance(node, list):
        for item in node:
            _count_refs(item, counts)
    elif isinstance(node, dict):
        name = _ref_name(node)
        if name in counts:
            counts[name] += 1
        for key, value in node.items():
            if key not in _LITERALS:
                _count_refs(value, counts)


def _refers_to(node: Any, name: str) -> bool:
    counts = {name: 0}
    _count_refs(node, counts)
    return counts[name] > 0


def _replace_refs(node: Any, inline: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_replace_refs(item, inline) for item in node]
    if not isinstance(node, dict):
        return node
    name = _ref_name(node)
    if name in inline:
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not set(siblings) & set(inline[name]):
            return _replace_refs({**inline[name], **siblings}, inline)
    return {k: (v if k in _LITERALS else _replace_refs(v, inline)) for k, v in node.items()}
