"""`mcp`: the MCP tools `pluginsdk mcp serve` and the server's /mcp serve (docs/mcp.md). Built on first use
(`LAZY_GROUPS`): a CLI call reads none of it."""

from typing import Annotated

from pydantic import Field

from .group import SettingsGroup

__all__ = ["McpSettings"]


class McpSettings(SettingsGroup):
    profile: str | None = None
    """Tool profile(s) `pluginsdk mcp serve` lists: provisioning (default), auth or all; comma-separated."""
    http: bool = True
    """`pluginsdk server start` also serves the MCP tools at /mcp (Streamable HTTP) and the OAuth endpoints."""
    public_url: str | None = Field(None, pattern=r"^https?://[^/?#\s]+(/[^?#\s]*)?$")
    """The server's base URL as clients reach it (`https://tools.example.org`): the OAuth issuer, and with
    `/mcp` the resource tokens are bound to. Default: the address the server answers on."""
    token_seconds: int = Field(900, ge=30, le=86400)
    """Lifetime of an access token this server issues for /mcp (never past the sign-in's own)."""
    allowed_origins: list[Annotated[str, Field(pattern=r"^https?://[^/?#\s]+$")]] = []
    """Web origins (`https://assistant.example.org`) whose pages may call /mcp from a browser, besides this
    server's own (`mcp.public_url`, else the address it answers on); a request with another `Origin` is
    refused 403 (MCP transport spec). A request without `Origin` (not from a browser) is not affected."""
