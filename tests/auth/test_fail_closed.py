"""Fail closed: a missing or broken auth service stops the engine (and the server) instead of allowing
everything; running without authorization takes an explicit setting; in-process use keeps the configured
administrator."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from pluginsdk import ConfigurationError, PermissionDeniedError, PluginSDK
from tests.auth.grants import failure
from tests.support.backends import base_config, open_sdk


@pytest.fixture
def auth_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "backends.local.auth", None)  # importing it now fails


@pytest.mark.usefixtures("auth_missing")
async def test_engine_refuses_to_start_without_its_auth_service(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as exc:
        async with PluginSDK(config=base_config(tmp_path)):
            pass
    assert exc.value.details["field"] == "app.authProvider.disableAuthorization"


@pytest.mark.usefixtures("auth_missing")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # uvicorn exits its thread
def test_server_does_not_serve_without_its_auth_service(tmp_path: Path) -> None:
    from tests.support.remote import running_server

    with pytest.raises(RuntimeError, match="did not start"), running_server(base_config(tmp_path)):
        pass


async def test_no_authorization_only_when_configured(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with open_sdk("local", tmp_path / "on") as sdk:
        async with PluginSDK(config=base_config(tmp_path / "on"), user="stranger") as stranger:
            assert isinstance(await failure(stranger.list_templates()), PermissionDeniedError)
        assert sdk
    app = {"authProvider": {"disableAuthorization": True}}
    with caplog.at_level(logging.WARNING, logger="pluginsdk.engine"):
        async with PluginSDK(config=base_config(tmp_path / "off", app=app), user="stranger") as stranger:
            assert (await stranger.list_templates()).templates == []
    assert "authorization is DISABLED" in caplog.text


@pytest.mark.parametrize("value", ["yes", 1, "maybe"])
async def test_a_vague_disable_setting_is_an_error(tmp_path: Path, value: object) -> None:
    with pytest.raises(ConfigurationError):
        async with PluginSDK(config=base_config(tmp_path, app={"authProvider": {"disableAuthorization": value}})):
            pass


async def test_in_process_default_user_is_the_configured_administrator(tmp_path: Path) -> None:
    app = {"authProvider": {"adminUserId": "root"}}
    async with PluginSDK(config=base_config(tmp_path, app=app)) as sdk:
        assert (await sdk.list_roles()).message.items  # acts as root, who holds admin
        await sdk.create_template(template_id="web", image_id="ami-1")
        created = await sdk.create_request("web", 1, dry_run=False)
        assert (await sdk.get_request(created.request_id)).created_by == "root"
    async with PluginSDK(config=base_config(tmp_path, app=app), user="administrator") as named:
        assert isinstance(await failure(named.list_roles()), PermissionDeniedError)  # named explicitly: no roles


async def test_an_engine_not_started_refuses_every_check(tmp_path: Path) -> None:
    from backends.local.engine import Engine
    from pluginsdk.config import load_settings
    from pluginsdk.errors import HandlerDiscoveryError
    from pluginsdk.principal import SYSTEM_ADMIN

    authz = Engine(load_settings(config=base_config(tmp_path), environ={})).authz
    checks = (
        authz.authenticate(None),
        authz.check_route(SYSTEM_ADMIN, "GET", "/templates"),
        authz.filter_allowed(SYSTEM_ADMIN, "template", [{}], dict, "GET"),
    )
    for check in checks:
        with pytest.raises(HandlerDiscoveryError, match="not started"):
            await check
