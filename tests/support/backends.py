"""Open a PluginSDK on either backend with the same configuration.

`local`: the engine in this process. `remote`: a real uvicorn server on
127.0.0.1 serving an engine on the same kind of store, and the SDK's remote
backend talking to it over HTTP (see `remote_sdk`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pluginsdk import PluginSDK

BACKENDS = ("local", "remote")


def base_config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """A fast, deterministic configuration: SQLite in tmp_path, quick local provider."""
    config: dict[str, Any] = {
        "storage": {"path": str(tmp_path / "store.db")},
        "provider": {
            "type": "local",
            "local": {"boot_delay": 0.05, "terminate_delay": 0.05, "seed": 7},
            # an `aws` provider a test reaches without configuring it (a health probe by name) stays on loopback:
            # a closed port, one attempt — never the real AWS endpoint
            "aws": {"endpoint_url": "http://127.0.0.1:9", "max_attempts": 1},
        },
        "sdk": {"reconcile_interval": 0.05},
    }
    for group, values in extra.items():
        config.setdefault(group, {}).update(values)
    return config


@asynccontextmanager
async def open_sdk(kind: str, tmp_path: Path, **extra: Any) -> AsyncIterator[PluginSDK]:
    async with open_sdk_on(kind, base_config(tmp_path, **extra), tmp_path) as sdk:
        yield sdk


@asynccontextmanager
async def open_sdk_on(kind: str, config: dict[str, Any], tmp_path: Path) -> AsyncIterator[PluginSDK]:
    """`open_sdk` for a given configuration (a store other processes share, a PostgreSQL database)."""
    if kind == "local":
        async with PluginSDK(config=config) as sdk:
            yield sdk
        return
    from tests.support.remote import remote_sdk

    async with remote_sdk(config, tmp_path) as sdk:
        yield sdk
