"""The remote client's retry, timeout and error-mapping edges, with respx standing in for the server (no
engine involved). respx mocks httpx's transport, so these run the backend with an explicit
`httpx.AsyncHTTPTransport`; the same `_send` logic over the backend's default lean client is covered
against real loopback servers in test_lean_http.py."""

from __future__ import annotations

import httpx
import pytest
import respx

from pluginsdk import ConfigurationError, NotFoundError, PluginSDK, ValidationError
from pluginsdk.errors import MethodExecutionError

URL = "http://pluginsdk.test"
REQ = {"request_id": "req-1", "status": "running", "count": 1, "template_id": "t"}


@pytest.fixture
async def sdk() -> PluginSDK:
    s = PluginSDK(
        backend="remote", api_url=URL, api_key="psdk_test", config={}, max_retries=2,
        transport=httpx.AsyncHTTPTransport(),
    )  # fmt: skip
    await s.start()
    return s


@respx.mock
async def test_retries_a_query_on_503_then_succeeds(sdk: PluginSDK) -> None:
    route = respx.get(f"{URL}/api/v1/requests/req-1").mock(
        side_effect=[httpx.Response(503, headers={"Retry-After": "0"}), httpx.Response(200, json=REQ)]
    )
    r = await sdk.get_request("req-1")
    assert r.request_id == "req-1" and route.call_count == 2
    assert route.calls[0].request.headers["authorization"] == "psdk_test"


@respx.mock
async def test_does_not_retry_a_command_without_an_id(sdk: PluginSDK) -> None:
    route = respx.post(f"{URL}/api/v1/machines").mock(return_value=httpx.Response(503, json={"error": "down"}))
    with pytest.raises(MethodExecutionError):
        await sdk.create_request("t", 1)
    assert route.call_count == 1


@respx.mock
async def test_retries_a_command_that_carries_its_id(sdk: PluginSDK) -> None:
    ok = {"request_id": "req-abc", "status": "submitted", "message": "ok"}
    route = respx.post(f"{URL}/api/v1/machines").mock(
        side_effect=[httpx.ConnectError("boom"), httpx.Response(202, json=ok)]
    )
    res = await sdk.create_request("t", 1, request_id="req-abc")
    assert res.id == "req-abc" and route.call_count == 2


@respx.mock
async def test_error_envelope_maps_back_to_the_same_class(sdk: PluginSDK) -> None:
    env = {"success": False, "error": "Request 'req-9' not found.", "error_code": "REQUEST_NOT_FOUND",
           "details": {"field": "request_id", "value": "req-9"}}  # fmt: skip
    respx.get(f"{URL}/api/v1/requests/req-9").mock(
        return_value=httpx.Response(404, json=env, headers={"X-Request-ID": "rid-1"})
    )
    with pytest.raises(NotFoundError) as exc:
        await sdk.get_request("req-9")
    assert exc.value.error_code == "REQUEST_NOT_FOUND" and exc.value.entity_id == "req-9"
    assert exc.value.request_id == "rid-1"


@respx.mock
async def test_malformed_error_body_still_raises_by_status(sdk: PluginSDK) -> None:
    respx.get(f"{URL}/api/v1/templates").mock(return_value=httpx.Response(400, text="<html>bad</html>"))
    with pytest.raises(ValidationError):
        await sdk.list_templates()


@respx.mock
async def test_timeout_becomes_a_typed_error(sdk: PluginSDK) -> None:
    respx.get(f"{URL}/api/v1/templates").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(MethodExecutionError, match="did not answer"):
        await sdk.list_templates()


@respx.mock
async def test_camel_case_replies_are_understood(sdk: PluginSDK) -> None:
    respx.get(f"{URL}/api/v1/requests/req-1").mock(
        return_value=httpx.Response(200, json={"requestId": "req-1", "status": "completed", "templateId": "t"})
    )
    r = await sdk.get_request("req-1")
    assert r.request_id == "req-1" and r.template_id == "t"


async def test_remote_needs_a_url() -> None:
    with pytest.raises(ConfigurationError, match=r"api\.url"):
        await PluginSDK(backend="remote", config={}).start()
