"""Every MCP-enabled catalog operation is a tool, under its own name and the spec's extra names."""

from __future__ import annotations

import re

from pluginsdk import PluginSDK
from pluginsdk.mcp.tools import renames
from pluginsdk.operations import CATALOG
from tests.mcp.helpers import connect

SPEC_EXTRA_TOOLS = {
    "check_provider_health", "list_providers", "get_provider_config", "get_provider_metrics", "request_machines",
    "get_request_status", "list_return_requests", "return_machines",
}  # fmt: skip


async def test_every_operation_is_a_tool_with_its_schema(local_sdk: PluginSDK, mode: str) -> None:
    async with connect(local_sdk, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    expected = {name for spec in CATALOG.values() for name in spec.mcp_names}
    assert set(tools) == expected
    assert set(tools) >= SPEC_EXTRA_TOOLS
    for spec in CATALOG.values():
        if not spec.cls.mcp.enabled:
            assert spec.name not in tools, spec.name
            continue
        for name in spec.mcp_names:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", name), name
            tool = tools[name]
            schema = tool.input_schema
            assert schema["type"] == "object"
            shown = renames(name, spec)
            fields = {shown.get(f, f) for f in spec.input_fields}
            assert set(schema.get("properties", {})) == fields, name
            assert set(schema.get("required", [])) == {shown.get(f, f) for f in spec.required_fields}, name
            assert tool.description and tool.description.startswith(spec.summary)
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            assert tool.annotations is not None and tool.annotations.read_only_hint is (spec.kind == "query")


async def test_extra_names_share_the_schema(local_sdk: PluginSDK) -> None:
    async with connect(local_sdk) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    own, extra = tools["create_request"].input_schema, tools["request_machines"].input_schema
    assert "requested_count" in own["properties"] and "requested_count" in own["required"]
    assert "count" in extra["properties"] and "count" in extra["required"]  # the spec's (template_id, count)
    assert extra["properties"]["count"] == own["properties"]["requested_count"]
    assert {k for k in extra["properties"] if k != "count"} == {k for k in own["properties"] if k != "requested_count"}
    assert "create_request" in (tools["request_machines"].description or "")
    assert tools["return_machines"].input_schema == tools["create_return_request"].input_schema
