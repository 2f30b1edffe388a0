"""Every tool's description names only what its own schemas hold: a field-like name mentioned in the tool's
description or in any description inside its input schema is a property of its input schema (the names a
call may send) or of its output schema (what it answers), a value the input schema lists, another tool's
name or an input field of a tool the same text names ("shaped like a create_constraint input"), or (where
the tool takes `attributes`) a criterion field, the keys `attributes` holds. The shared field docs write
REST's camelCase (`groupId`); the MCP schema takes snake_case.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pluginsdk.mcp.tools import describe, tool_specs
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES

TOOLS = tool_specs()
CRITERION_FIELDS = {f for fields in OBJECT_TYPES.values() for f in fields}
"""The keys an `attributes` object takes (`databaseId`, `assetName`): the spec's criterion fields."""

_FIELD_LIKE = (
    re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b"),  # camelCase
    re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"),  # snake_case
)
_FIELD_LIST = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")
"""`{group_id, permission, permission_type}` (not a `{{VARIABLE}}` reference)."""


def _descriptions(node: Any) -> list[str]:
    if isinstance(node, list):
        return [d for v in node for d in _descriptions(v)]
    if not isinstance(node, dict):
        return []
    own = [node["description"]] if isinstance(node.get("description"), str) else []
    return own + [d for k, v in node.items() if k != "description" for d in _descriptions(v)]


def _collect(node: Any, key: str) -> set[str]:
    """Property names (key "properties") or listed values (key "enum") anywhere in a schema."""
    if isinstance(node, list):
        return set().union(*(_collect(v, key) for v in node))
    if not isinstance(node, dict):
        return set()
    found: set[str] = set()
    if key == "properties" and isinstance(node.get("properties"), dict):
        found |= set(node["properties"])
    if key == "enum":
        found |= {v for v in [*node.get("enum", ()), node.get("const")] if isinstance(v, str)}
    return found.union(*(_collect(v, key) for v in node.values()))


def mentioned(text: str) -> set[str]:
    """The field-like names of one description (a name in double quotes is a value: `"userRole"`)."""
    text = re.sub(r'"[^"\s]*"', "", text)
    names = {m.group() for pattern in _FIELD_LIKE for m in pattern.finditer(text)}
    for group in _FIELD_LIST.findall(text):
        names |= {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", group) if w[0].islower()}
    return names


def _named_inputs(text: str) -> set[str]:
    """The input fields of the tools a description names ("each shaped like a create_constraint input")."""
    named = [t for t in TOOLS if re.search(rf"\b{t}\b", text)]
    return set().union(*(_collect(describe(t, TOOLS[t]).input_schema, "properties") for t in named))


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_descriptions_name_fields_the_schema_accepts(tool: str) -> None:
    described = describe(tool, TOOLS[tool])
    known = (
        _collect(described.input_schema, "properties")
        | _collect(described.output_schema or {}, "properties")
        | _collect(described.input_schema, "enum")
        | set(TOOLS)
        | (CRITERION_FIELDS if "attributes" in _collect(described.input_schema, "properties") else set())
    )
    texts = [described.description or "", *_descriptions(described.input_schema)]
    unknown = {name: text for text in texts for name in mentioned(text) - known - _named_inputs(text)}
    assert unknown == {}, unknown


def test_the_check_sees_camel_case_field_lists() -> None:
    """The rule above finds field names written as a camelCase list, in braces or after a backtick."""
    assert mentioned("Permissions for roles: {groupId, permission: GET|PUT, permissionType: allow}.") == {
        "groupId",
        "permission",
        "permissionType",
        "allow",
    }
    assert mentioned("each shaped like a create body plus `constraintId`; {{VARIABLE}}") == {"constraintId"}
    assert mentioned("Objects, each {objectType, attributes}.") == {"objectType", "attributes"}
