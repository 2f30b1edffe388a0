"""A tool accepts what its `inputSchema` says and nothing more; errors name fields as the caller sent them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pluginsdk import PluginSDK
from tests.mcp.helpers import connect, data, failure

REFUSED = [
    # names other interfaces take (aliases, camelCase), which the tool's schema does not list
    ("request_machines", {"template_id": "web", "machine_count": 1}, "machine_count", "additionalProperties"),
    ("request_machines", {"template_id": "web", "machineCount": 1}, "machineCount", "additionalProperties"),
    ("request_machines", {"template_id": "web", "count": 1, "requested_count": 1}, "requested_count", None),
    ("create_request", {"template_id": "web", "count": 1}, "count", "additionalProperties"),
    ("create_request", {"templateId": "web", "requested_count": 1}, "templateId", "additionalProperties"),
    ("get_request_status", {"request_ids": ["req-1"]}, "request_ids", "additionalProperties"),
    ("get_request_status", {"requestId": "req-1"}, "requestId", "additionalProperties"),
    ("list_requests", {"provider": "local"}, "provider", "additionalProperties"),
    # values of another type than the schema's, which the operation model would coerce
    ("request_machines", {"template_id": "web", "count": "2"}, "count", "type"),
    ("request_machines", {"template_id": "web", "count": True}, "count", "type"),
    ("request_machines", {"template_id": "web", "count": 1, "wait": "yes"}, "wait", "type"),
    ("request_machines", {"template_id": "web", "count": 1, "wait": 1}, "wait", "type"),
    ("get_request_status", {"request_id": 7}, "request_id", "type"),
    ("get_request_status", {"request_id": ["req-1", 7]}, "request_id.1", "type"),
    ("return_machines", {"machine_ids": "i-1"}, "machine_ids", "type"),
    # rules: bounds, patterns, enums, required
    ("request_machines", {"template_id": "web", "count": 0}, "count", "minimum"),
    ("request_machines", {"template_id": "web", "count": 1, "request_id": "x"}, "request_id", "pattern"),
    ("list_requests", {"status": "bogus"}, "status", "enum"),
    ("request_machines", {"template_id": "web"}, "count", "required"),
    ("get_request_status", {"request_id": []}, "request_id", "minItems"),
    ("get_request_status", {}, "request_id", "required"),
]


@pytest.mark.parametrize(("tool", "args", "field", "rule"), REFUSED)
async def test_refused(local_sdk: PluginSDK, tool: str, args: dict[str, Any], field: str, rule: str | None) -> None:
    async with connect(local_sdk) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        err = failure(await client.call_tool(tool, args))
    assert err["type"] == "ValidationError" and err["error_code"] == "VALIDATION_ERROR"
    assert err["details"]["field"] == field, err
    assert f"{field!r}" in err["message"] and tool in err["message"]
    if rule is not None:
        assert err["details"]["errors"][0]["type"] == rule
    if rule == "additionalProperties":
        assert "its fields:" in err["message"]
    assert err["arguments"] == args


async def test_extra_name_errors_name_the_tools_fields(local_sdk: PluginSDK) -> None:
    """The operation model's own rules (after the schema) answer in the tool's names, not the operation's."""
    async with connect(local_sdk) as client:
        blank = failure(await client.call_tool("return_machines", {"machine_ids": [" "]}))
        assert blank["type"] == "ValidationError" and blank["details"]["field"].startswith("machine_ids")
        assert "return_machines" in blank["message"] and "create_return_request" not in blank["message"]
        missing = failure(await client.call_tool("request_machines", {"template_id": "nope", "count": 1}))
        assert missing["error_code"] == "TEMPLATE_NOT_FOUND"


async def test_declared_names_are_accepted(local_sdk: PluginSDK) -> None:
    async with connect(local_sdk) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        for tool, count in (("request_machines", "count"), ("create_request", "requested_count")):
            args = {"template_id": "web", count: 1, "dry_run": True, "tags": {"a": "b"}, "timeout": 60}
            assert data(await client.call_tool(tool, args))["dry_run"] is True
        listed = data(await client.call_tool("list_requests", {"status": None, "limit": 5}))
        assert listed["requests"] == []  # dry runs record nothing


async def test_schemas_advertise_no_name_they_refuse(local_sdk: PluginSDK) -> None:
    """No description offers an alias the schema would refuse; every tool refuses undeclared names."""
    async with connect(local_sdk) as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            schema = tool.input_schema
            assert schema.get("additionalProperties") is False, tool.name
            for name, prop in schema.get("properties", {}).items():
                assert "alias" not in prop.get("description", "").lower(), (tool.name, name)
        err = failure(await client.call_tool("list_roles", {"bogus": 1}))
        assert err["details"]["field"] == "bogus"


async def test_messages_never_quote_a_value(local_sdk: PluginSDK) -> None:
    """A rejected value may be a password: messages state the rule; a secret field's value reads `***`."""
    async with connect(local_sdk) as client:
        err = failure(await client.call_tool("login", {"username": "alice", "password": 987654321987}))
        assert err["details"]["field"] == "password" and err["details"]["value"] == "***"
        assert "987654321987" not in str(err["message"]) + str(err["details"])
        long = "x" * 300
        err = failure(await client.call_tool("create_template", {"template_id": long, "image_id": "ami-1"}))
        assert long not in err["message"] and err["details"]["field"] == "template_id"


async def test_huge_arguments_are_not_echoed_whole(local_sdk: PluginSDK) -> None:
    """A 200,000-character value or name: the error object echoes only its first 200 characters."""
    huge = "a" * 200_000
    cut = "a" * 200 + "... (199800 more characters)"
    async with connect(local_sdk) as client:
        err = failure(await client.call_tool("get_template", {"template_id": huge}))
        assert err["arguments"] == {"template_id": cut} and err["details"]["value"] == cut
        err = failure(await client.call_tool("request_machines", {"template_id": "web", "count": 1, huge: 1}))
        assert err["arguments"] == {"template_id": "web", "count": 1, cut: 1}
        assert err["details"]["field"] == cut and huge not in err["message"]
        assert huge not in json.dumps(err)
