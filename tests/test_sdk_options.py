"""PluginSDK's own options: misspellings are caught, `base_url` is `api_url`, and `wait=True` works on both
backends even when the wait is longer than one HTTP call may take."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk import ConfigurationError, PluginSDK
from pluginsdk.models import RequestStatus
from tests.support.backends import open_sdk
from tests.support.remote import admin_key, running_server


def test_an_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="base_ur"):
        PluginSDK(backend="remote", base_ur="http://127.0.0.1:8000")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="api_url and base_url"):
        PluginSDK(api_url="http://127.0.0.1:1", base_url="http://127.0.0.1:2")


async def test_an_unknown_config_key_stops_the_sdk_before_it_runs_anything(tmp_path: Path) -> None:
    sdk = PluginSDK(config={"storage": {"path": str(tmp_path / "s.db")}, "provider": {"tpye": "aws"}})
    with pytest.raises(ConfigurationError, match=r"did you mean 'provider\.type'"):
        await sdk.start()
    assert not (tmp_path / "s.db").exists()


async def test_base_url_is_the_httpx_spelling_of_api_url(tmp_path: Path) -> None:
    from tests.support.backends import base_config

    config = base_config(tmp_path)
    key = await admin_key(config)
    with running_server(config) as url:
        async with PluginSDK(backend="remote", base_url=url, api_key=key, config=config) as sdk:
            await sdk.create_template(template_id="web", image_id="ami-1")
            assert [t.template_id for t in (await sdk.list_templates()).templates] == ["web"]
            assert sdk.settings.api.url == url and sdk.settings.source_of("api.url") == "argument"


async def test_wait_outlasts_the_http_read_timeout(backend_kind: str, tmp_path: Path) -> None:
    """The machines take ~1.5 s to boot; one HTTP call may take 0.5 s. Remotely the SDK polls."""
    extra: dict[str, Any] = {
        "provider": {"local": {"boot_delay": 1.5, "terminate_delay": 0.05, "seed": 3}},
        "api": {"read_timeout": 0.5, "max_retries": 0},
    }
    async with open_sdk(backend_kind, tmp_path, **extra) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        created = await sdk.create_request("web", 2, wait=True, timeout=30)
        assert created.status == "completed", created.message
        assert len(created.machines) == 2 and all(m.status.value == "running" for m in created.machines)
        request = await sdk.get_request(created.id)
        assert request.status is RequestStatus.COMPLETED


async def test_a_request_that_times_out_while_waited_for_ends_the_same_on_both_backends(
    backend_kind: str, tmp_path: Path
) -> None:
    extra: dict[str, Any] = {"provider": {"local": {"boot_delay": 30, "seed": 3}}, "api": {"read_timeout": 0.5}}
    async with open_sdk(backend_kind, tmp_path, **extra) as sdk:
        await sdk.create_template(template_id="slow", image_id="ami-1")
        created = await sdk.create_request("slow", 1, wait=True, timeout=1)
        assert created.status == "failed" and "timed out" in created.message
        assert (await sdk.get_request(created.id)).status is RequestStatus.FAILED


class LosesFirstAnswer(httpx.AsyncHTTPTransport):
    """Delivers each request, but the first answer to a POST is lost on the way back (the server did the work)."""

    def __init__(self) -> None:
        super().__init__()
        self.lost = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        if request.method == "POST" and not self.lost:
            await response.aread()
            self.lost += 1
            raise httpx.ReadError("connection reset after the server answered")
        return response


async def test_a_lost_answer_is_retried_with_the_same_id_and_runs_once(tmp_path: Path) -> None:
    from tests.support.backends import base_config

    config = base_config(tmp_path)
    key = await admin_key(config)
    async with PluginSDK(config=config) as local:
        await local.create_template(template_id="web", image_id="ami-1")
    transport = LosesFirstAnswer()
    with running_server(config) as url:
        async with PluginSDK(backend="remote", api_url=url, api_key=key, config=config, transport=transport) as sdk:
            created = await sdk.create_request("web", 2)
            assert transport.lost == 1
            listed = await sdk.list_requests()
            assert [r.request_id for r in listed.requests] == [created.id]  # one request, not two
            assert created.id.startswith("req-")


async def test_a_command_without_an_id_whose_answer_is_lost_is_not_resent(tmp_path: Path) -> None:
    from pluginsdk import APIConnectionError
    from tests.support.backends import base_config

    config = base_config(tmp_path)
    key = await admin_key(config)
    transport = LosesFirstAnswer()
    with running_server(config) as url:
        async with PluginSDK(backend="remote", api_url=url, api_key=key, config=config, transport=transport) as sdk:
            with pytest.raises(APIConnectionError, match="may or may not have run"):
                await sdk.create_template(template_id="web", image_id="ami-1")
            assert [t.template_id for t in (await sdk.list_templates()).templates] == ["web"]  # it had run, once
