"""Open an in-process MCP client on a server over a started SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client

from pluginsdk import PluginSDK
from pluginsdk.mcp import create_server


@asynccontextmanager
async def connect(sdk: PluginSDK, mode: str = "auto") -> AsyncIterator[Client]:
    async with Client(create_server(sdk), mode=mode) as client:
        yield client


def data(result: Any) -> Any:
    """A tool result's structured content, checked against its text twin."""
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content
