"""Configuration layering: arguments > PLUGIN_* > file/dict > defaults, with named errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pluginsdk import ConfigurationError, PluginSDK
from pluginsdk.config import default_data_dir, load_settings


def test_defaults_are_embedded(tmp_path: Path) -> None:
    s = load_settings(environ={})
    assert s.provider.type == "local" and s.storage.type == "sqlite" and s.scheduler.type == "default"
    assert s.storage_target == str(default_data_dir() / "pluginsdk.db")
    assert s.source_of("provider.type") == "default"


def test_default_store_is_in_platformdirs_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == Path(platformdirs.user_data_dir("pluginsdk", appauthor=False))
    assert load_settings(environ={}).storage_target == str(tmp_path / "xdg" / "pluginsdk" / "pluginsdk.db")
    monkeypatch.setenv("PLUGIN_STORAGE_PATH", str(tmp_path / "mine.db"))  # the override still wins
    assert load_settings().storage_target == str(tmp_path / "mine.db")


def test_an_existing_store_in_the_earlier_default_directory_stays_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where platformdirs' directory is not the one earlier releases used (macOS, Windows), a store there is
    kept; platformdirs' directory is used once it exists (the user moved the store) or when there is none."""
    import platformdirs

    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    elsewhere = tmp_path / "Library" / "Application Support" / "pluginsdk"  # as on macOS
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(elsewhere))
    assert default_data_dir() == elsewhere  # nothing anywhere yet: platformdirs' place
    earlier = tmp_path / ".local" / "share" / "pluginsdk"
    earlier.mkdir(parents=True)
    (earlier / "pluginsdk.db").write_bytes(b"")
    assert default_data_dir() == earlier
    elsewhere.mkdir(parents=True)
    assert default_data_dir() == elsewhere


def test_priority_argument_over_env_over_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"provider": {"type": "aws", "region": "eu-west-1"}, "logging": {"level": "INFO"}}))
    env = {"PLUGIN_REGION": "us-east-2", "PLUGIN_LOG_LEVEL": "ERROR"}
    s = load_settings(config_path=cfg, environ=env, overrides={"logging.level": "DEBUG"})
    assert s.provider.type == "aws" and s.source_of("provider.type") == f"file {cfg}"
    assert s.provider.region == "us-east-2" and s.source_of("provider.region") == "environment PLUGIN_REGION"
    assert s.logging.level == "DEBUG" and s.source_of("logging.level") == "argument"


def test_yaml_file_and_flat_sdk_dict(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("storage:\n  path: /tmp/x.db\nscheduler:\n  type: hostfactory\n")
    s = load_settings(config_path=cfg, config={"provider": "aws", "region": "ap-south-1", "timeout": 12}, environ={})
    assert s.storage.path == "/tmp/x.db" and s.scheduler.type == "hostfactory"
    assert s.provider.type == "aws" and s.provider.region == "ap-south-1" and s.sdk.timeout == 12


def test_config_file_from_plugin_config_env(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"api": {"port": 9001}}))
    assert load_settings(environ={"PLUGIN_CONFIG": str(cfg)}).api.port == 9001


@pytest.mark.parametrize(
    ("kwargs", "key", "source"),
    [
        ({"environ": {"PLUGIN_API_PORT": "eighty"}}, "api.port", "environment PLUGIN_API_PORT"),
        ({"environ": {"PLUGIN_LOG_LEVEL": "LOUD"}}, "logging.level", "environment PLUGIN_LOG_LEVEL"),
        ({"environ": {}, "config": {"scheduler": {"type": "slurm"}}}, "scheduler.type", "config dict"),
        ({"environ": {}, "overrides": {"sdk.timeout": -1}}, "sdk.timeout", "argument"),
    ],
)
def test_bad_values_name_key_and_source(kwargs: dict[str, object], key: str, source: str) -> None:
    with pytest.raises(ConfigurationError) as exc:
        load_settings(**kwargs)  # type: ignore[arg-type]
    assert exc.value.key == key and exc.value.source == source
    assert key in exc.value.message and source in exc.value.message
    assert exc.value.error_code == "CONFIGURATION_ERROR"


def test_unreadable_or_malformed_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="Cannot read"):
        load_settings(config_path=tmp_path / "missing.json", environ={})
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        load_settings(config_path=bad, environ={})
    lst = tmp_path / "list.yaml"
    lst.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigurationError, match="object of groups"):
        load_settings(config_path=lst, environ={})


async def test_sdk_uses_plugin_storage_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGIN_STORAGE_PATH", str(tmp_path / "env.db"))
    async with PluginSDK() as sdk:
        await sdk.create_template(template_id="t", image_id="ami-1")
        assert sdk.settings.source_of("storage.path") == "environment PLUGIN_STORAGE_PATH"
    assert (tmp_path / "env.db").exists()


async def test_sdk_bad_provider_is_a_clear_error(tmp_path: Path) -> None:
    from pluginsdk import HandlerDiscoveryError, NotFoundError

    async with PluginSDK(provider="nimbus", config={"storage": {"path": str(tmp_path / "s.db")}}) as sdk:
        with pytest.raises(HandlerDiscoveryError, match="No provider named 'nimbus'"):  # configured: misconfiguration
            await sdk.get_provider_health()
        with pytest.raises(NotFoundError, match="No provider named 'cirrus'"):  # asked for by the caller: 404
            await sdk.get_provider_health(provider_name="cirrus")


@pytest.mark.parametrize(
    ("kwargs", "key", "source", "closest"),
    [
        ({"config": {"provider": {"tpye": "aws"}}}, "provider.tpye", "config dict", "provider.type"),
        ({"config": {"api": {"ca_bundel": "/x.pem"}}}, "api.ca_bundel", "config dict", "api.ca_bundle"),
        ({"config": {"provder": "aws"}}, "provder", "config dict", "provider"),
        ({"config": {"storag": {"path": "/x.db"}}}, "storag", "config dict", "storage"),
        ({"config": {"logging": {"level": "INFO", "colour": "red"}}}, "logging.colour", "config dict", None),
    ],
)
def test_unknown_keys_name_key_source_and_the_closest_valid_key(
    kwargs: dict[str, object], key: str, source: str, closest: str | None
) -> None:
    with pytest.raises(ConfigurationError) as exc:
        load_settings(environ={}, **kwargs)  # type: ignore[arg-type]
    assert exc.value.key == key and exc.value.source == source
    assert f"Unknown configuration key {key!r} (from {source})" in exc.value.message
    if closest:
        assert f"did you mean {closest!r}?" in exc.value.message and exc.value.details["expected"] == closest
    else:
        assert "valid keys: logging.file, logging.format, logging.level" in exc.value.message


def test_an_unknown_key_in_a_file_is_an_error_not_a_silent_default(tmp_path: Path) -> None:
    cfg = tmp_path / "plugin.yaml"
    cfg.write_text("provider:\n  tpye: aws\n")
    with pytest.raises(ConfigurationError) as exc:
        load_settings(config_path=cfg, environ={})
    assert exc.value.key == "provider.tpye" and exc.value.source == f"file {cfg}"
    assert "did you mean 'provider.type'?" in exc.value.message


def test_driver_groups_are_checked_and_instance_types_stay_open(tmp_path: Path) -> None:
    config = {
        "provider": {"type": "local", "local": {"boot_delay": 0.1}, "aws": {"endpoint_url": "http://127.0.0.1:9"}},
        "scheduler": {"instance_types": {"m5": {"xlarge": {"ncpus": 4}}}},
        "app": {"authProvider": {"useManaged": {"enabled": True}}},
    }
    s = load_settings(config=config, environ={})
    assert s.group("provider.local") == {"boot_delay": 0.1}
    assert s.group("provider.aws") == {"endpoint_url": "http://127.0.0.1:9"}
    assert s.group("scheduler.instance_types") == {"m5": {"xlarge": {"ncpus": 4}}}  # a table of names, not keys
    with pytest.raises(ConfigurationError, match=r"provider\.regoin"):
        load_settings(config={"provider": {"regoin": "eu-west-1"}}, environ={})  # a value, not a driver group
    with pytest.raises(ConfigurationError, match=r"'provider\.acme'.*valid keys: .*provider\.aws, .*provider\.local"):
        load_settings(config={"provider": {"acme": {"endpoint": "x"}}}, environ={})  # no driver of that name


@pytest.mark.parametrize(
    ("config", "key", "closest"),
    [
        ({"provider": {"aws": {"endpont_url": "http://127.0.0.1:9"}}}, "provider.aws.endpont_url", "endpoint_url"),
        ({"provider": {"local": {"boot_dleay": 0.1}}}, "provider.local.boot_dleay", "boot_delay"),
        ({"provider": {"lcoal": {"boot_delay": 0.1}}}, "provider.lcoal", "local"),
        ({"app": {"authProvider": {"useManged": {"enabled": True}}}}, "app.authProvider.useManged", "useManaged"),
        (
            {"app": {"authProvider": {"useManaged": {"enabeld": True}}}},
            "app.authProvider.useManaged.enabeld",
            "enabled",
        ),
        ({"app": {"authProvider": {"smtp": {"pasword": "x"}}}}, "app.authProvider.smtp.pasword", "password"),
        ({"app": {"authProvidr": {"adminUserId": "x"}}}, "app.authProvidr", "authProvider"),
        ({"app": {"audit": {"decisionSampleRat": 1}}}, "app.audit.decisionSampleRat", "decisionSampleRate"),
    ],
)
def test_every_level_refuses_an_unknown_key_with_the_closest_valid_one(
    tmp_path: Path, config: dict[str, object], key: str, closest: str
) -> None:
    """A typo in a nested group never falls back to a default, whichever layer holds it."""
    with pytest.raises(ConfigurationError) as exc:
        load_settings(config=config, environ={})
    assert exc.value.key == key and exc.value.source == "config dict"
    assert f"did you mean '{key.rpartition('.')[0]}.{closest}'?" in exc.value.message
    cfg = tmp_path / "plugin.yaml"
    cfg.write_text(json.dumps(config))  # JSON is YAML
    with pytest.raises(ConfigurationError) as exc:
        load_settings(environ={"PLUGIN_CONFIG": str(cfg)})
    assert exc.value.key == key and exc.value.source == f"file {cfg}"


def test_a_driver_groups_values_and_retired_keys_fail_at_load() -> None:
    with pytest.raises(ConfigurationError) as exc:
        load_settings(config={"provider": {"local": {"failure_rate": 3}}}, environ={})
    assert exc.value.key == "provider.local.failure_rate"
    with pytest.raises(ConfigurationError) as exc:
        load_settings(config={"provider": {"aws": {"retry_mode": "sometimes"}}}, environ={})
    assert exc.value.key == "provider.aws.retry_mode"
    with pytest.raises(ConfigurationError) as exc:  # at load, not at the first AWS call
        load_settings(config={"provider": {"aws": {"retry_base_delay": 0.5}}}, environ={})
    assert exc.value.key == "provider.aws.retry_base_delay" and "provider.aws.retry_mode" in exc.value.message


def test_the_auth_services_keys_are_the_ones_the_model_knows() -> None:
    """Every key the auth service reads from `app` is a key of `AppSettings` (else it would be refused):
    the reads are recorded, then given back as a configuration that must load."""
    from backends.local.auth.config import load_auth_config
    from pluginsdk.config import SettingsGroup

    read: dict[str, object] = {}  # dotted key -> the value read; a group reads as {}

    class Spy:
        def __init__(self, model: SettingsGroup, prefix: str) -> None:
            self.model, self.prefix = model, prefix

        def __getattr__(self, name: str) -> object:
            value = getattr(self.model, name)
            field = type(self.model).model_fields.get(name)
            if field is None:  # a method or property of the group
                return value
            key = f"{self.prefix}.{field.alias or name}"
            if isinstance(value, SettingsGroup):
                read.setdefault(key, {})
                return Spy(value, key)
            read[key] = value
            return value

    settings = load_settings(environ={})
    settings.app = Spy(settings.app, "app")  # type: ignore[assignment]
    load_auth_config(settings)
    config: dict[str, object] = {}
    for dotted, value in read.items():
        node = config
        *groups, leaf = dotted.split(".")[1:]
        for g in groups:
            node = node.setdefault(g, {})  # type: ignore[assignment]
        node.setdefault(leaf, value)
    assert {"authProvider", "region", "apiUrl"} <= set(config)
    load_settings(config={"app": config}, environ={})  # no key refused


async def test_the_sdk_refuses_a_nested_typo_before_any_call(tmp_path: Path) -> None:
    config = {"storage": {"path": str(tmp_path / "s.db")}, "provider": {"type": "aws", "aws": {"endpont_url": "x"}}}
    with pytest.raises(ConfigurationError, match=r"did you mean 'provider\.aws\.endpoint_url'\?"):
        async with PluginSDK(config=config) as sdk:
            await sdk.list_templates()


def test_the_cli_refuses_a_nested_typo_in_its_config_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pluginsdk.cli import cli

    cfg = tmp_path / "plugin.yaml"
    cfg.write_text(f"storage:\n  path: {tmp_path / 's.db'}\nprovider:\n  local:\n    boot_dleay: 0.1\n")
    res = CliRunner().invoke(cli, ["--config", str(cfg), "--format", "json", "templates", "list"])
    assert res.exit_code != 0
    assert "CONFIGURATION_ERROR" in res.output and "did you mean 'provider.local.boot_delay'?" in res.output


IDP = {"issuer": "https://idp.example", "clientId": "c", "jwksUrl": "https://idp.example/j"}


@pytest.mark.parametrize(
    ("app", "key", "expected"),
    [
        ({"authProvider": {"useManaged": {"tokenMinutes": 0}}}, "app.authProvider.useManaged.tokenMinutes", "greater"),
        ({"authProvider": {"useManaged": {"enabled": "yes"}}}, "app.authProvider.useManaged.enabled", "bool"),
        ({"authProvider": {"smtp": {"port": True}}}, "app.authProvider.smtp.port", "not true or false"),
        (
            {"authProvider": {"useManaged": {"passwordHashing": {"memoryKib": 16, "parallelism": 4}}}},
            "app.authProvider.useManaged.passwordHashing.memoryKib",
            "at least 8 x parallelism (32)",
        ),
        (
            {
                "authProvider": {
                    "useExternalOAuthIdp": {"enabled": True, "issuer": "https://idp", "jwksUrl": "http://idp/j"}
                }
            },
            "app.authProvider.useExternalOAuthIdp.clientId",
            "the client id",
        ),
        (
            {"authProvider": {"useManaged": {"enabled": True}, "useExternalOAuthIdp": {"enabled": "true", **IDP}}},
            "app.authProvider.useExternalOAuthIdp.enabled",
            "cannot be combined",
        ),
        ({"authProvider": {"disableAuthorization": 1}}, "app.authProvider.disableAuthorization", "bool"),
        ({"audit": {"decisionSampleRate": 2}}, "app.audit.decisionSampleRate", "less than or equal to 1"),
        ({"authProvider": {"secretsKey": "sekrit-too-short"}}, "app.authProvider.secretsKey", "32 bytes"),
    ],
)
def test_the_auth_services_values_are_checked_at_load(
    tmp_path: Path, app: dict[str, object], key: str, expected: str
) -> None:
    """`app` is typed like every other group: a wrong value is refused by `load_settings`, naming the key and
    where it came from, before any engine starts; a secret is never shown."""
    for given, source in (({"config": {"app": app}}, "config dict"), ({"config_path": tmp_path / "c.json"}, "file")):
        (tmp_path / "c.json").write_text(json.dumps({"app": app}))
        with pytest.raises(ConfigurationError) as exc:
            load_settings(environ={}, **given)  # type: ignore[arg-type]
        assert exc.value.key == key and exc.value.source.startswith(source), exc.value.message
        assert f"{key!r} (from {exc.value.source})" in exc.value.message and expected in exc.value.message
        assert "sekrit" not in str(exc.value.to_envelope())


def test_the_auth_services_settings_are_typed_with_their_defaults_declared_once() -> None:
    from pluginsdk.config import AppSettings

    app = load_settings(environ={}).app
    assert type(app) is AppSettings and app.authProvider.mode == "none"
    assert app.authProvider.useManaged.tokenMinutes == 60 and app.authProvider.smtp.sender == "pluginsdk@localhost"
    given = {
        "authProvider": {
            "useManaged": {"enabled": "TRUE", "tokenMinutes": "90", "signInLimits": {"lockSeconds": 2}},
            "smtp": {"from": "auth@test", "username": "", "password": "pw"},
            "adminUserId": None,
        },
        "featuresEnabled": "A, B",
    }
    settings = load_settings(config={"app": given}, environ={})
    managed = settings.app.authProvider.useManaged
    assert (managed.enabled, managed.tokenMinutes, managed.signInLimits.lockSeconds) == (True, 90, 2.0)
    assert settings.app.authProvider.mode == "managed" and settings.app.featuresEnabled == ("A", "B")
    assert settings.app.authProvider.smtp.sender == "auth@test" and settings.app.authProvider.smtp.username is None
    assert settings.app.authProvider.adminUserId == "administrator"  # null: the default holds
    shown = settings.redacted()["app"]["authProvider"]
    assert shown["smtp"]["password"] == "***" and shown["smtp"]["from"] == "auth@test"


def test_the_lazy_groups_are_validated_at_load_and_built_from_their_defaults_when_first_read(tmp_path: Path) -> None:
    """`app` and `slurm` are built on first use: not given, each is made from its model's defaults when read;
    given (in any layer), each is checked at load like every other group, so a wrong value never waits for a
    server to start. Every way of showing or passing on the settings still carries them."""
    from pluginsdk.config import Settings

    settings = load_settings(environ={})
    assert settings.app_given is None
    assert settings.slurm.scontrol == "/usr/bin/scontrol" and settings.app.authProvider.adminUserId == "administrator"
    assert settings.app_given is settings.app  # read once, kept
    (tmp_path / "c.json").write_text(json.dumps({"slurm": {"nodesets": [{"nodes": "n[1-2]"}]}}))
    with pytest.raises(ConfigurationError) as exc:
        load_settings(config_path=tmp_path / "c.json", environ={})
    assert exc.value.key.startswith("slurm.nodesets") and exc.value.source.startswith("file")
    with pytest.raises(ConfigurationError, match=r"did you mean 'app\.audit'\?"):
        load_settings(config={"app": {"audti": {"decisionSampleRate": 1}}}, environ={})
    given = load_settings(
        config={"app": {"authProvider": {"adminUserId": "boss", "smtp": {"password": "pw"}}}},
        overrides={"storage.path": str(tmp_path / "s.db")},
        environ={},
    )
    assert given.app_given is not None and given.app_given.authProvider.adminUserId == "boss"
    shown = given.redacted()
    assert list(shown)[-2:] == ["slurm", "app"] and shown["app"]["authProvider"]["smtp"]["password"] == "***"
    assert "pw" not in repr(given)
    again = Settings.model_validate(json.loads(json.dumps(given.model_dump(mode="json"))))  # a server's workers
    assert again.app.authProvider.adminUserId == "boss" and again.storage.path == str(tmp_path / "s.db")
    with pytest.raises(ValueError, match="decisionSampleRate"):
        Settings(app={"audit": {"decisionSampleRate": 2}})  # type: ignore[call-arg]


def test_the_auth_service_reads_an_absent_app_as_the_models_defaults() -> None:
    """Without `app` the auth service starts on what an absent group means (`backends/local/auth/config.py`,
    its models unbuilt); that must be what the built models' defaults say."""
    from backends.local.auth.config import load_auth_config

    absent = load_auth_config(load_settings(environ={}))
    assert absent.given is None
    built = load_settings(environ={})
    assert built.app.authProvider.useManaged.enabled is False  # read: `app` built from its defaults
    defaults = load_auth_config(built)
    assert defaults.given is not None
    for fact in (
        "admin_user_id",
        "mode",
        "default_user_role_name",
        "secrets_key",
        "region",
        "api_url",
        "decision_sample_rate",
    ):
        assert getattr(absent, fact) == getattr(defaults, fact), fact
    assert absent.given is None  # comparing read nothing of `app`
