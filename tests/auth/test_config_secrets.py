"""The effective configuration shown to callers: no credential in any answer, and administrators only.

Secrecy is a property of the configuration model (`SECRET` fields), and every shown text has the passwords
of URLs and DSNs masked; a read-only caller is refused the route (403), on both backends and over MCP.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from pluginsdk import PermissionDeniedError, PluginSDK
from pluginsdk.config import load_settings
from tests.auth.conftest import acting_as
from tests.mcp.helpers import connect, data, failure
from tests.support.backends import base_config, open_sdk_on

PASSWORD = "Sup3r-s3cret-pw"
SECRETS = {
    "app": {"authProvider": {"smtp": {"host": "127.0.0.1", "password": "smtp-" + PASSWORD}, "secretsKey": None}},
    "api": {"key": "psdk_" + PASSWORD},
}


def _with_password(pg_url: str) -> str:
    """The test database's URL with a password (the server trusts loopback: it is sent and ignored)."""
    return pg_url.replace("postgres@", f"postgres:{PASSWORD}@", 1)


def _config(tmp_path: Path, storage: dict[str, str]) -> dict[str, object]:
    return base_config(tmp_path, storage=storage, **SECRETS)


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "sqlite":  # a DSN-like text in another setting: masked all the same
        return {"path": str(tmp_path / "store.db")}
    pg_url = request.getfixturevalue("pg_url")
    return {"type": "postgresql", "url": _with_password(pg_url), "seal_key_file": str(tmp_path / "seal.key")}


async def test_no_answer_shows_a_password_and_a_read_only_caller_is_refused(
    backend_kind: str, tmp_path: Path, storage: dict[str, str]
) -> None:
    config = _config(tmp_path, storage)
    async with open_sdk_on(backend_kind, config, tmp_path) as sdk:
        view = await sdk.get_configuration()
        shown = view.to_json()
        assert PASSWORD not in shown
        assert view.configuration["api"]["key"] == "***"
        assert view.configuration["app"]["authProvider"]["smtp"]["password"] == "***"
        if "url" in storage:
            assert view.configuration["storage"]["url"].startswith("postgresql://postgres:***@127.0.0.1")
        assert PASSWORD not in (await sdk.get_configuration(group="storage")).to_json()

        await sdk.create_user_roles("reader", ["basicReadOnly"])
        async with _reader(sdk, config, tmp_path) as reader:
            with pytest.raises(PermissionDeniedError) as refused:
                await reader.get_configuration()
            assert refused.value.status == 403 and PASSWORD not in str(refused.value.to_envelope())
            assert (await reader.list_templates()).total_count == 0  # the other read routes stay readable


def _reader(sdk: PluginSDK, config: dict[str, object], tmp_path: Path) -> AbstractAsyncContextManager[PluginSDK]:
    """The SDK of `reader` on the same store: in-process on its configuration, else over REST with a key."""
    if sdk.backend.name == "local":
        return PluginSDK(config=config, user="reader")
    return acting_as(sdk, "reader", tmp_path)


async def test_mcp_get_provider_config_masks_and_refuses(tmp_path: Path, pg_url: str) -> None:
    storage = {"type": "postgresql", "url": _with_password(pg_url), "seal_key_file": str(tmp_path / "seal.key")}
    config = _config(tmp_path, storage)
    async with PluginSDK(config=config) as sdk, connect(sdk) as client:
        result = await client.call_tool("get_provider_config", {})
        assert PASSWORD not in str(result.content) and "postgres:***@" in str(data(result))
        await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with PluginSDK(config=config, user="reader") as reader, connect(reader) as client:
        refused = failure(await client.call_tool("get_provider_config", {}))
        assert refused["type"] == "PermissionDeniedError" and PASSWORD not in str(refused)


@pytest.mark.parametrize(
    "text",
    [
        f"postgresql://user:{PASSWORD}@db.example:5432/app",
        f"postgresql://user:{PASSWORD}@db.example/app?sslmode=require",
        f"postgresql://db.example/app?password={PASSWORD}&sslmode=require",
        f"host=db.example user=app password={PASSWORD} dbname=app",
        f"host=db.example password='{PASSWORD} x' dbname=app",
        f"https://user:{PASSWORD}@idp.example/jwks",
    ],
)
def test_credentials_are_masked_wherever_they_appear(text: str) -> None:
    """In a known field or in a driver's own group, a URL's or DSN's password is never shown."""
    settings = load_settings(
        config={"storage": {"url": text}, "templates": {"dir": text}, "provider": {"aws": {"endpoint_url": text}}},
        environ={"PLUGIN_API_KEY": PASSWORD},
    )
    shown = str(settings.redacted())
    assert PASSWORD not in shown and "***" in shown
    assert load_settings(config={"api": {"token": PASSWORD}}, environ={}).redacted()["api"]["token"] == "***"


def test_a_wrong_value_in_an_error_is_masked_too() -> None:
    from pluginsdk.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as exc:
        load_settings(config={"api": {"port": f"postgresql://u:{PASSWORD}@h/db"}}, environ={})
    assert PASSWORD not in str(exc.value.to_envelope())


async def test_a_store_seeded_with_the_earlier_default_is_upgraded_an_edited_one_kept(tmp_path: Path) -> None:
    import json

    from backends.local.auth.defaults import EARLIER_DEFAULTS, default_constraints

    config = base_config(tmp_path)
    cid = "psdk-default-readonly-api-read"
    earlier = EARLIER_DEFAULTS[cid][0]
    edited = {**earlier, "description": "Our own read routes, edited by the operator."}
    for stored, expected in ((earlier, next(c for c in default_constraints() if c["constraintId"] == cid)),
                             (edited, edited)):  # fmt: skip
        async with PluginSDK(config=config) as sdk:
            db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
            await db.execute("UPDATE auth_constraints SET data = :d WHERE constraint_id = :c",
                             {"d": json.dumps(stored), "c": cid})  # fmt: skip
            await db.execute("DELETE FROM meta WHERE key = 'auth.defaults_revision'")  # a store of the earlier release
        async with PluginSDK(config=config) as sdk:
            assert (await sdk.get_constraint(cid)).to_dict(by_alias=True)["description"] == expected["description"]


def test_reprs_of_the_settings_show_no_credential() -> None:
    """Settings end up in logs and tracebacks: their repr masks like the shown configuration."""
    settings = load_settings(
        config={
            "api": {"key": PASSWORD},
            "storage": {"url": f"postgresql://u:{PASSWORD}@h/db"},
            "app": {"authProvider": {"smtp": {"password": PASSWORD}}},
        },
        environ={},
    )
    for shown in (repr(settings), str(settings), repr(settings.api), repr(settings.storage), str(settings.storage)):
        assert PASSWORD not in shown and "***" in shown
