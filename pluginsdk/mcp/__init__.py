"""The MCP server (extra `mcp`): `pluginsdk mcp serve --stdio`, or `create_server(sdk)` in-process.

One tool per MCP name of every catalog operation, resources `templates://`, `requests://`, `machines://`
and `providers://`. The `mcp` package (~0.9 s to import) loads only when a server is built or served.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server import Server

    from ..sdk import PluginSDK

__all__ = ["create_server", "serve_stdio"]


def create_server(sdk: PluginSDK) -> Server[Any]:
    """An MCP server over a started `sdk` (see `pluginsdk.mcp.server`)."""
    from .server import create_server as _create

    return _create(sdk)


async def serve_stdio(**sdk_options: Any) -> None:
    """Serve MCP on stdin/stdout until stdin closes; `sdk_options` go to PluginSDK."""
    from .server import serve_stdio as _serve

    await _serve(**sdk_options)
