"""Layered configuration: arguments > PLUGIN_* environment > file (or SDK dict) > defaults.

Every value remembers where it came from (`Settings.sources`), so a wrong one becomes a `ConfigurationError`
that names the key and the source ("storage.path from PLUGIN_STORAGE_PATH"). File formats: JSON or YAML.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from .settings import Settings
from .validation import validate

__all__ = ["ENV_VARS", "load_settings"]


ENV_VARS: dict[str, str] = {
    "PLUGIN_PROVIDER": "provider.type",
    "PLUGIN_REGION": "provider.region",
    "PLUGIN_PROFILE": "provider.profile",
    "PLUGIN_TIMEOUT": "sdk.timeout",
    "PLUGIN_USER": "sdk.user",
    "PLUGIN_LOG_LEVEL": "logging.level",
    "PLUGIN_LOG_FILE": "logging.file",
    "PLUGIN_LOG_FORMAT": "logging.format",
    "PLUGIN_API_HOST": "api.host",
    "PLUGIN_API_PORT": "api.port",
    "PLUGIN_API_WORKERS": "api.workers",
    "PLUGIN_API_URL": "api.url",
    "PLUGIN_API_KEY": "api.key",
    "PLUGIN_API_VERIFY": "api.verify",
    "PLUGIN_API_CA_BUNDLE": "api.ca_bundle",
    "PLUGIN_API_CLIENT_CERT": "api.client_cert",
    "PLUGIN_API_CLIENT_KEY": "api.client_key",
    "PLUGIN_STORAGE_TYPE": "storage.type",
    "PLUGIN_STORAGE_PATH": "storage.path",
    "PLUGIN_STORAGE_URL": "storage.url",
    "PLUGIN_SCHEDULER": "scheduler.type",
    "PLUGIN_TEMPLATES_DIR": "templates.dir",
    "PLUGIN_MCP_PROFILE": "mcp.profile",
}
"""Environment variable -> dotted configuration key."""

#: flat keys the SDK's config dict accepts (spec: provider, region, timeout, log_level).
_FLAT_ALIASES = {
    "provider": "provider.type",
    "region": "provider.region",
    "profile": "provider.profile",
    "timeout": "sdk.timeout",
    "log_level": "logging.level",
    "storage_path": "storage.path",
    "scheduler": "scheduler.type",
}


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            node[p] = nxt
        node = nxt
    node[parts[-1]] = value


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and k != "app":
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _read_file(path: Path) -> dict[str, Any]:
    from ..files import InputTooLargeError, load_json, load_yaml, read_bounded

    try:
        text = read_bounded(path)
        data = (load_yaml(text, str(path)) or {}) if path.suffix.lower() in (".yaml", ".yml") else load_json(text)
    except OSError as exc:
        raise ConfigurationError(
            f"Cannot read configuration file {str(path)!r}: {exc.strerror}.", key="config_path", source=str(path)
        ) from exc
    except InputTooLargeError as exc:
        raise ConfigurationError(
            f"Configuration file {str(path)!r} is refused: {exc} (docs/input.md).",
            key="config_path",
            source=str(path),
        ) from None
    except (ValueError, ImportError) as exc:
        raise ConfigurationError(
            f"Configuration file {str(path)!r} is not valid {path.suffix.lstrip('.').upper() or 'JSON'}: {exc}",
            key="config_path",
            source=str(path),
        ) from exc
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"Configuration file {str(path)!r} must hold an object of groups.", key="config_path", source=str(path)
        )
    return data


def _normalise(data: Mapping[str, Any]) -> dict[str, Any]:
    """Accept flat SDK keys (provider='aws', region=..., timeout=...) beside groups."""
    tree: dict[str, Any] = {}
    for k, v in data.items():
        if k in _FLAT_ALIASES and not isinstance(v, Mapping):
            _set(tree, _FLAT_ALIASES[k], v)
        elif isinstance(v, Mapping):
            for fk, fv in _flatten(v, f"{k}.").items():
                _set(tree, fk, fv)
        else:
            tree[k] = v
    return tree


def load_settings(
    *,
    config: Mapping[str, Any] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the layers and validate.

    `overrides` are dotted keys from command-line arguments (highest);
    `environ` defaults to `os.environ`; `config_path` falls back to
    `PLUGIN_CONFIG`. A bad value raises ConfigurationError naming key and source.
    """
    env = os.environ if environ is None else environ
    layers: list[tuple[str, dict[str, Any]]] = []
    path = config_path or env.get("PLUGIN_CONFIG")
    if path:
        layers.append((f"file {os.fspath(path)}", _normalise(_read_file(Path(path)))))
    if config:
        layers.append(("config dict", _normalise(config)))
    env_tree: dict[str, Any] = {}
    env_sources: dict[str, str] = {}
    for var, key in ENV_VARS.items():
        if env.get(var) not in (None, ""):
            _set(env_tree, key, env[var])
            env_sources[key] = f"environment {var}"
    layers.append(("environment", env_tree))
    if overrides:
        arg_tree: dict[str, Any] = {}
        for key, value in overrides.items():
            if value is not None:
                _set(arg_tree, key, value)
        layers.append(("argument", arg_tree))

    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for label, tree in layers:
        for key, value in _flatten(tree).items():
            _set(merged, key, value)
            sources[key] = env_sources.get(key, label) if label == "environment" else label
    settings = validate(merged, sources, _FLAT_ALIASES)
    settings.sources = sources
    settings.config_file = os.path.abspath(path) if path else None
    return settings
