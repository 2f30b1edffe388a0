"""Compact schemas say the same as pydantic's, and every structured result matches its tool's output schema."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema import ValidationError as SchemaError

from pluginsdk import PluginSDK
from pluginsdk.mcp.schemas import compact
from pluginsdk.mcp.tools import tool_specs
from tests.mcp.helpers import connect, data

NULLABLE = {"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "null"}], "default": None, "title": "X"}


def test_compact_folds_nullable_and_drops_titles_only() -> None:
    assert compact({"type": "object", "properties": {"x": NULLABLE}}, output=False) == {
        "type": "object",
        "properties": {"x": {"type": ["string", "null"], "pattern": "^a"}},
    }
    kept = {"anyOf": [{"$ref": "#/$defs/E"}, {"type": "null"}]}
    enum = {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}
    schema = {
        "type": "object",
        "title": "Op",
        "description": "the operation",
        "required": [],
        "properties": {"title": {"type": "string", "title": "T"}, "e": kept, "n": enum, "d": {"default": {"title": 1}}},
        "$defs": {"E": {"enum": ["a", "b"], "title": "E", "description": "An enum."}},
    }
    inlined = {"anyOf": [{"enum": ["a", "b"], "description": "An enum."}, {"type": "null"}]}  # E, used once
    assert compact(schema, output=False) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "e": inlined, "n": enum, "d": {"default": {"title": 1}}},
    }
    loose = {"p": {"type": "object", "additionalProperties": True, "default": {}}}
    assert compact({**schema, "properties": loose}, output=True) == {  # E, now unused, dropped
        "type": "object",
        "properties": {"p": {"type": "object"}},
    }


def test_compact_keeps_shared_definitions_and_inlines_the_rest() -> None:
    status = {"enum": ["a", "b"], "type": "string"}
    item = {"type": "object", "properties": {"s": {"$ref": "#/$defs/Status"}}}
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}
    schema = {
        "type": "object",
        "properties": {
            "one": {"$ref": "#/$defs/Item"},
            "a": {"$ref": "#/$defs/Shared"},
            "b": {"$ref": "#/$defs/Shared"},
            "t": {"$ref": "#/$defs/Tree"},
            "clash": {"$ref": "#/$defs/Typed", "type": "string"},
        },
        "$defs": {"Item": item, "Status": status, "Shared": status, "Tree": tree, "Typed": status},
    }
    assert compact(schema, output=True) == {
        "type": "object",
        "properties": {
            "one": {"type": "object", "properties": {"s": status}},  # Item, and Status within it, used once
            "a": {"$ref": "#/$defs/Shared"},
            "b": {"$ref": "#/$defs/Shared"},
            "t": {"$ref": "#/$defs/Tree"},  # refers to itself: stays a definition
            "clash": {"$ref": "#/$defs/Typed", "type": "string"},  # siblings it also has: kept as it was
        },
        "$defs": {"Shared": status, "Tree": tree, "Typed": status},
    }


SAMPLES: list[Any] = [None, "", "a", "abc", "web", "req-1", "req-abc-1", "2026-01-01T00:00:00Z", 0, 1, -1, 5, 3601, 2.5,
                      True, False, [], ["a"], ["i-1", "i-1"], {}, {"a": "b"}, {"a": 1}]  # fmt: skip


def test_compact_input_schemas_accept_what_pydantics_accept() -> None:
    """Per field of every tool: each sample value is accepted by both schemas or by neither."""
    for tool, spec in tool_specs().items():
        original = spec.input_schema()
        small = compact(original, output=False)
        for name in original.get("properties", {}):
            full_v = Draft202012Validator({**original, "required": []})
            small_v = Draft202012Validator({**small, "required": []})
            for value in SAMPLES:
                a, b = full_v.is_valid({name: value}), small_v.is_valid({name: value})
                assert a == b, (tool, name, value)


async def test_results_match_the_output_schemas(sdk: PluginSDK) -> None:
    """A provisioning cycle's results, on either backend, against each tool's published output schema."""
    async with connect(sdk) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}

        async def call(tool: str, args: dict[str, Any]) -> Any:
            result = data(await client.call_tool(tool, args))
            validator = Draft202012Validator(schemas[tool], format_checker=Draft202012Validator.FORMAT_CHECKER)
            try:
                validator.validate(result)
            except SchemaError as exc:  # pragma: no cover - the failure message is the point
                pytest.fail(f"{tool}: {exc.message} at {list(exc.absolute_path)}")
            return result

        await call("create_template", {"template_id": "web", "image_id": "ami-1"})
        req = await call("request_machines", {"template_id": "web", "count": 2, "wait": True})
        ids = [m["machine_id"] for m in req["machines"]]
        for tool, args in [
            ("get_template", {"template_id": "web"}),
            ("list_templates", {}),
            ("get_request", {"request_id": req["request_id"]}),
            ("get_request_status", {"request_id": req["request_id"]}),
            ("list_requests", {}),
            ("list_active_requests", {}),
            ("get_request_summary", {}),
            ("get_machine", {"machine_id": ids[0]}),
            ("list_machines", {}),
            ("get_machine_status", {"machine_ids": ids}),
            ("get_active_machine_count", {}),
            ("list_providers", {}),
            ("check_provider_health", {}),
            ("get_provider_config", {}),
            ("get_provider_metrics", {}),
            ("get_system_status", {}),
            ("return_machines", {"machine_ids": ids}),
            ("list_return_requests", {}),
            ("list_roles", {}),
            ("list_api_keys", {}),
            ("list_constraints", {}),
            ("get_version", {}),
        ]:
            await call(tool, args)
