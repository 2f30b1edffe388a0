"""The MCP server (extra `mcp`): `pluginsdk mcp serve --stdio`, or `create_server(sdk)` in-process.

One tool per MCP name of every catalog operation in the chosen profile (`profiles.py`), resources
`templates://`, `requests://`, `machines://` and `providers://`. The `mcp` package (~0.9 s to import) loads
only when a server is built or served.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from mcp.server import Server

    from ..sdk import PluginSDK

__all__ = ["create_server", "serve_stdio"]


def _server_module() -> ModuleType:
    """`pluginsdk.mcp.server`, or a ConfigurationError saying how to install the `mcp` extra."""
    try:
        from . import server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        raise ConfigurationError(
            "The MCP server needs the `mcp` extra: pip install 'pluginsdk[mcp]'.", key="mcp"
        ) from exc
    return server


def create_server(sdk: PluginSDK, profile: str | None = None) -> Server[Any]:
    """An MCP server over a started `sdk` listing the tools of `profile` (see `pluginsdk.mcp.server`)."""
    server: Server[Any] = _server_module().create_server(sdk, profile)
    return server


async def serve_stdio(profile: str | None = None, **sdk_options: Any) -> None:
    """Serve MCP on stdin/stdout until stdin closes; `sdk_options` go to PluginSDK."""
    await _server_module().serve_stdio(profile, **sdk_options)
