"""Calling tools and reading resources through the SDK's in-process MCP client (both wire modes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from pluginsdk import PluginSDK
from tests.mcp.helpers import connect, data, failure
from tests.support.backends import open_sdk


async def test_provision_and_return_cycle(local_sdk: PluginSDK, mode: str) -> None:
    async with connect(local_sdk, mode) as client:
        created = await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        assert not created.is_error and data(created)["template_id"] == "web"
        req = data(await client.call_tool("request_machines", {"template_id": "web", "count": 2, "wait": True}))
        assert req["status"] == "completed" and len(req["machines"]) == 2
        status = data(await client.call_tool("get_request_status", {"request_id": [req["request_id"]]}))
        assert status["requests"][0]["status"] == "completed"
        ids = [m["machine_id"] for m in req["machines"]]
        ret = data(await client.call_tool("return_machines", {"machine_ids": ids}))
        assert ret["processed_machines"] == ids and ret["request_id"].startswith("ret-")
        returns = data(await client.call_tool("list_return_requests", {}))
        assert ret["request_id"] in {r["request_id"] for r in returns["requests"]}
        health = data(await client.call_tool("check_provider_health", {}))
        assert health["healthy"] is True and health["provider_name"] == "local"


async def test_failing_tool_returns_the_error_object(local_sdk: PluginSDK, mode: str) -> None:
    async with connect(local_sdk, mode) as client:
        err = failure(await client.call_tool("get_template", {"template_id": "nope"}))
        assert err["type"] == "NotFoundError" and err["tool"] == "get_template"
        assert err["arguments"] == {"template_id": "nope"} and "nope" in err["message"]
        assert err["error_code"] == "TEMPLATE_NOT_FOUND"

        bad = failure(await client.call_tool("create_request", {"template_id": "web", "requested_count": 0}))
        assert bad["type"] == "ValidationError" and bad["details"]["field"] == "requested_count"
        assert bad["arguments"] == {"template_id": "web", "requested_count": 0}

        unknown = failure(await client.call_tool("no_such_tool", {"x": 1}))
        assert unknown["type"] == "HandlerDiscoveryError" and unknown["tool"] == "no_such_tool"


async def test_error_object_never_echoes_secrets(local_sdk: PluginSDK) -> None:
    async with connect(local_sdk) as client:
        res = await client.call_tool("login", {"username": "alice", "password": "hunter2-secret"})
    err = failure(res)
    assert err["tool"] == "login" and err["arguments"] == {"username": "alice", "password": "***"}
    assert "hunter2" not in res.content[0].text


async def test_resources_list_and_read(local_sdk: PluginSDK, mode: str) -> None:
    async with connect(local_sdk, mode) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        res = await client.call_tool("create_request", {"template_id": "web", "requested_count": 1, "wait": True})
        req = data(res)
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert listed == {"templates://", "requests://", "machines://", "providers://"}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {"templates://{template_id}", "requests://{request_id}", "machines://{machine_id}"}

        async def read(uri: str) -> Any:
            contents = (await client.read_resource(uri)).contents
            assert contents[0].mime_type == "application/json"
            return json.loads(contents[0].text)  # type: ignore[union-attr]

        assert [t["template_id"] for t in (await read("templates://"))["templates"]] == ["web"]
        assert (await read("templates://web"))["template"]["image_id"] == "ami-1"
        assert req["request_id"] in {r["request_id"] for r in (await read("requests://"))["requests"]}
        assert (await read(f"requests://{req['request_id']}"))["status"] == "completed"
        machine_id = req["machines"][0]["machine_id"]
        assert machine_id in {m["machine_id"] for m in (await read("machines://"))["machines"]}
        assert (await read(f"machines://{machine_id}"))["machine_id"] == machine_id
        assert "local" in {p["name"] for p in (await read("providers://"))["providers"]}


async def test_resource_errors_carry_the_error_object(local_sdk: PluginSDK, mode: str) -> None:
    async with connect(local_sdk, mode) as client:
        with pytest.raises(MCPError) as missing:
            await client.read_resource("templates://nope")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("files://etc/passwd")
    assert missing.value.code == -32602
    assert missing.value.data["error"]["type"] == "NotFoundError"
    assert missing.value.data["error"]["uri"] == "templates://nope"
    assert unknown.value.code == -32602 and "templates://" in unknown.value.message


async def test_same_answers_over_either_backend(sdk: PluginSDK) -> None:
    async with connect(sdk) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        listed = data(await client.call_tool("list_templates", {}))
        assert [t["template_id"] for t in listed["templates"]] == ["web"]
        err = failure(await client.call_tool("get_machine", {"machine_id": "i-nope"}))
        assert err["type"] == "NotFoundError" and err["error_code"] == "MACHINE_NOT_FOUND"


class BrokenBackend:
    """A third-party backend with a bug: its failure is not an SDKError."""

    name = "broken"

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def execute(self, operation: Any, principal: Any = None) -> Any:
        raise RuntimeError("internal detail /srv/secret.db")


async def test_unexpected_failure_hides_internals(tmp_path: Path) -> None:
    sdk = PluginSDK(backend=BrokenBackend(), config={"storage": {"path": str(tmp_path / "s.db")}})
    async with sdk, connect(sdk) as client:
        res = await client.call_tool("list_templates", {})
    err = failure(res)
    assert err["type"] == "MethodExecutionError" and err["tool"] == "list_templates"
    assert "RuntimeError" in err["message"] and "/srv/secret.db" not in res.content[0].text


async def test_denied_tools_answer_the_error_object(tmp_path: Path, mode: str) -> None:
    """A server acting as a user without rights: every tool answers FORBIDDEN as an error object, reads included."""
    async with open_sdk("local", tmp_path, sdk={"user": "nobody"}) as sdk, connect(sdk, mode) as client:
        for tool, args in (
            ("list_templates", {}),
            ("create_template", {"template_id": "w", "image_id": "ami-1"}),
            ("request_machines", {"template_id": "w", "count": 1}),
            ("list_api_keys", {}),
        ):
            err = failure(await client.call_tool(tool, args))
            assert err["type"] == "PermissionDeniedError" and err["error_code"] == "FORBIDDEN", (tool, err)
        with pytest.raises(MCPError) as denied:
            await client.read_resource("templates://")
        assert denied.value.data["error"]["error_code"] == "FORBIDDEN"


async def test_get_request_status_takes_the_specs_request_id(backend_kind: str, tmp_path: Path) -> None:
    """GetRequestQuery's `request_id`, as the SDK takes it: one id, or a list of ids; errors name it."""
    async with open_sdk(backend_kind, tmp_path) as sdk, connect(sdk) as client:
        await client.call_tool("create_template", {"template_id": "web", "image_id": "ami-1"})
        made = [data(await client.call_tool("create_request", {"template_id": "web", "requested_count": 1}))]
        made.append(data(await client.call_tool("create_request", {"template_id": "web", "requested_count": 1})))
        ids = [m["request_id"] for m in made]
        one = data(await client.call_tool("get_request_status", {"request_id": ids[0]}))
        assert [r["request_id"] for r in one["requests"]] == ids[:1]
        both = data(await client.call_tool("get_request_status", {"request_id": ids, "long": False}))
        assert [r["request_id"] for r in both["requests"]] == ids
        missing = failure(await client.call_tool("get_request_status", {"request_id": "req-nope"}))
        assert missing["error_code"] == "REQUEST_NOT_FOUND"
        blank = failure(await client.call_tool("get_request_status", {"request_id": [" "]}))
        assert blank["details"]["field"].startswith("request_id") and "request_ids" not in blank["message"]
        assert (await sdk.get_request_status(request_id=ids[0])).requests[0].request_id == ids[0]
