"""The remote client's retry, idempotency, timeout and error-mapping edges, with respx standing in for the
server (no engine involved): answers a real server does not give on demand (503 then 200, a gateway's 502,
a read timeout mid-call). What the client does against real servers is in test_remote_options.py."""

from __future__ import annotations

import json
import re

import httpx
import pytest
import respx

from pluginsdk import (
    APIConnectionError,
    APITimeoutError,
    ConfigurationError,
    NotFoundError,
    PluginSDK,
    ProviderError,
    SDKError,
    ValidationError,
)
from pluginsdk.errors import MethodExecutionError

URL = "http://pluginsdk.test"
REQ = {"request_id": "req-1", "status": "running", "count": 1, "template_id": "t"}
CREATED = {"request_id": "req-abc", "status": "submitted", "message": "ok"}
TEMPLATE = {"template": {"template_id": "t", "image_id": "ami-1"}, "message": "created"}


@pytest.fixture
async def sdk() -> PluginSDK:
    s = PluginSDK(
        backend="remote", api_url=URL, api_key="psdk_test", config={}, max_retries=2,
        transport=httpx.AsyncHTTPTransport(),
    )  # fmt: skip
    await s.start()
    return s


def sent_body(route: respx.Route, n: int) -> dict[str, object]:
    body: dict[str, object] = json.loads(route.calls[n].request.content)
    return body


@respx.mock
async def test_retries_a_query_on_503_then_succeeds(sdk: PluginSDK) -> None:
    route = respx.get(f"{URL}/api/v1/requests/req-1").mock(
        side_effect=[httpx.Response(503, headers={"Retry-After": "0"}), httpx.Response(200, json=REQ)]
    )
    r = await sdk.get_request("req-1")
    assert r.request_id == "req-1" and route.call_count == 2
    assert route.calls[0].request.headers["authorization"] == "psdk_test"


@respx.mock
async def test_does_not_retry_a_command_without_an_idempotency_id(sdk: PluginSDK) -> None:
    route = respx.post(f"{URL}/api/v1/templates").mock(return_value=httpx.Response(503, json={"error": "down"}))
    with pytest.raises(MethodExecutionError):
        await sdk.create_template(template_id="t", image_id="ami-1")
    assert route.call_count == 1


@respx.mock
async def test_a_command_gets_a_client_made_id_and_every_attempt_sends_the_same(sdk: PluginSDK) -> None:
    route = respx.post(f"{URL}/api/v1/machines").mock(
        side_effect=[httpx.ConnectError("boom"), httpx.Response(503), httpx.Response(202, json=CREATED)]
    )
    await sdk.create_request("t", 1)
    assert route.call_count == 3
    ids = {sent_body(route, n)["request_id"] for n in range(3)}
    assert len(ids) == 1 and re.fullmatch(r"req-[0-9a-f-]{36}", str(ids.pop()))
    ret = respx.post(f"{URL}/api/v1/machines/return").mock(
        side_effect=[httpx.ReadTimeout("slow"), httpx.Response(200, json={"request_id": "ret-1"})]
    )
    await sdk.create_return_request(["i-1"])
    assert ret.call_count == 2 and sent_body(ret, 0)["request_id"] == sent_body(ret, 1)["request_id"]
    assert str(sent_body(ret, 0)["request_id"]).startswith("ret-")


@respx.mock
async def test_the_callers_own_id_is_kept(sdk: PluginSDK) -> None:
    route = respx.post(f"{URL}/api/v1/machines").mock(return_value=httpx.Response(202, json=CREATED))
    res = await sdk.create_request("t", 1, request_id="req-abc")
    assert res.id == "req-abc" and sent_body(route, 0)["request_id"] == "req-abc"


@respx.mock
async def test_a_servers_5xx_envelope_is_its_answer_but_a_gateways_502_is_retried(sdk: PluginSDK) -> None:
    refused = {"success": False, "error": "capacity", "error_code": "PROVIDER_ERROR", "details": {}}
    route = respx.post(f"{URL}/api/v1/machines").mock(return_value=httpx.Response(502, json=refused))
    with pytest.raises(ProviderError):
        await sdk.create_request("t", 1)
    assert route.call_count == 1  # retried with its id, it would read back the failed request as success
    gateway = respx.get(f"{URL}/api/v1/requests/req-1").mock(
        side_effect=[httpx.Response(502, text="<html>Bad Gateway</html>"), httpx.Response(200, json=REQ)]
    )
    assert (await sdk.get_request("req-1")).request_id == "req-1" and gateway.call_count == 2


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
async def test_a_timeout_is_its_own_class_naming_the_phase(sdk: PluginSDK) -> None:
    route = respx.get(f"{URL}/api/v1/templates").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError) as exc:
        await sdk.list_templates()
    assert route.call_count == 3  # a query: retried
    assert exc.value.details["phase"] == "read" and exc.value.error_code == "TIMEOUT"
    assert "3 attempts" in exc.value.message and isinstance(exc.value, APIConnectionError)
    respx.post(f"{URL}/api/v1/templates").mock(side_effect=httpx.ConnectTimeout("no route"))
    with pytest.raises(APITimeoutError, match=r"connect timeout 5\.0s") as exc:
        await sdk.create_template(template_id="t", image_id="ami-1")
    assert "may or may not have run" not in exc.value.message  # never connected: it did not run
    assert exc.value.details["phase"] == "connect"
    respx.delete(f"{URL}/api/v1/templates/t").mock(side_effect=httpx.WriteTimeout("stuck"))
    with pytest.raises(APITimeoutError, match="may or may not have run"):
        await sdk.delete_template("t")


@respx.mock
async def test_connection_failures_are_not_server_errors(sdk: PluginSDK) -> None:
    route = respx.get(f"{URL}/api/v1/templates").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(APIConnectionError) as exc:
        await sdk.list_templates()
    assert route.call_count == 3 and exc.value.error_code == "CONNECTION_ERROR"
    assert not isinstance(exc.value, APITimeoutError | MethodExecutionError) and isinstance(exc.value, SDKError)
    assert exc.value.details == {"url": URL, "reason": "ConnectError"}
    tls = respx.get(f"{URL}/api/v1/requests/req-1").mock(
        side_effect=httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    )
    with pytest.raises(APIConnectionError, match=r"api\.ca_bundle"):
        await sdk.get_request("req-1")
    assert tls.call_count == 1  # retrying cannot make a certificate trusted


@respx.mock
async def test_camel_case_replies_are_understood(sdk: PluginSDK) -> None:
    respx.get(f"{URL}/api/v1/requests/req-1").mock(
        return_value=httpx.Response(200, json={"requestId": "req-1", "status": "completed", "templateId": "t"})
    )
    r = await sdk.get_request("req-1")
    assert r.request_id == "req-1" and r.template_id == "t"


@respx.mock
async def test_wait_polls_instead_of_holding_one_call(sdk: PluginSDK) -> None:
    submit = respx.post(f"{URL}/api/v1/machines").mock(return_value=httpx.Response(202, json=CREATED))
    running = {"requests": [{**REQ, "request_id": "req-abc"}]}
    done = {"requests": [{**REQ, "request_id": "req-abc", "status": "completed", "message": "1 of 1 running."}]}
    status = respx.get(url__regex=rf"{URL}/api/v1/requests/status.*").mock(
        side_effect=[httpx.Response(200, json=running), httpx.Response(200, json=done)]
    )
    res = await sdk.create_request("t", 1, wait=True, timeout=30)
    assert res.status == "completed" and res.message == "1 of 1 running."
    assert sent_body(submit, 0)["wait"] is False and status.call_count == 2
    assert "req-abc" in str(status.calls[0].request.url)


async def test_remote_needs_a_url() -> None:
    with pytest.raises(ConfigurationError, match=r"api\.url"):
        await PluginSDK(backend="remote", config={}).start()


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host/x", "http://"])
async def test_a_url_without_http_scheme_or_host_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"api\.url") as exc:
        await PluginSDK(backend="remote", base_url=url, config={}).start()
    assert exc.value.key == "api.url"


@respx.mock
async def test_a_redirect_is_not_followed_with_the_credentials(sdk: PluginSDK) -> None:
    route = respx.get(f"{URL}/api/v1/requests/req-1").mock(
        return_value=httpx.Response(301, headers={"Location": "https://pluginsdk.test/api/v1/requests/req-1"})
    )
    with pytest.raises(ConfigurationError, match=r"redirects \(301\) to https://pluginsdk\.test") as exc:
        await sdk.get_request("req-1")
    assert exc.value.key == "api.url" and route.call_count == 1 and len(respx.calls) == 1


@respx.mock
async def test_an_answer_that_is_not_a_result_is_an_sdk_error(sdk: PluginSDK) -> None:
    respx.get(f"{URL}/api/v1/requests/req-1").mock(return_value=httpx.Response(200, text="<html>a portal</html>"))
    with pytest.raises(MethodExecutionError, match="not a Request"):
        await sdk.get_request("req-1")
    respx.get(f"{URL}/api/v1/templates").mock(return_value=httpx.Response(200, json={"templates": "nope"}))
    with pytest.raises(MethodExecutionError, match="not a TemplateList"):
        await sdk.list_templates()


@pytest.mark.parametrize("key", ["psdk_abc\r\nX-Admin: 1", "psdk_\u00e9t\u00e9", "psdk_\x00"])
async def test_a_credential_that_cannot_be_a_header_is_refused_unsent_and_unechoed(key: str) -> None:
    with respx.mock:
        sdk = PluginSDK(backend="remote", api_url=URL, api_key=key, config={}, transport=httpx.AsyncHTTPTransport())
        with pytest.raises(ConfigurationError) as exc:
            await sdk.start()
        assert exc.value.key == "api.key" and exc.value.source == "argument"
        assert key not in exc.value.message and "X-Admin" not in exc.value.message
        assert len(respx.calls) == 0
