"""MCP over HTTP: the MCP tools at /mcp (Streamable HTTP), with this server as their OAuth 2.1 authorization server.

`PluginApp` hands these paths here: `/mcp`, `/.well-known/oauth-protected-resource[/mcp]` (RFC 9728),
`/.well-known/oauth-authorization-server` (RFC 8414), `/register` (RFC 7591), `/authorize`, `/token` and the
sign-in page `/oauth/signin`. The tools are those of the stdio server (`pluginsdk.mcp`, the same profile:
`mcp.profile`), and every call runs as the caller of the HTTP request that carries it
(`pluginsdk.mcp.caller`): tier 1 on the REST route behind the tool, tier 2, then the handler. A caller
authenticates each request with an API key, a bearer token the REST server accepts (the configured IdP's
JWT), or an access token this server issued after a managed-pool sign-in (`grants.py`, `signin.py`).

The `mcp` package loads on the first request to one of these paths, so a server no assistant uses does not
pay for it; `mcp.http: false` turns all of it off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from ..contract import ServedBackend
    from .app import McpHttp

__all__ = ["PATHS", "RemoteMcp", "serves"]

PATHS = frozenset({"/mcp", "/authorize", "/token", "/register", "/oauth/signin"})


def serves(path: str) -> bool:
    """Whether `path` is one of the remote MCP transport's (the rest go to the REST door)."""
    return path in PATHS or path.startswith("/.well-known/oauth-")


class RemoteMcp:
    """The remote transport, built on first use (importing `mcp` and deriving the tools then)."""

    def __init__(self, backend: ServedBackend, settings: Any, max_body_bytes: int) -> None:
        self._args = (backend, settings, max_body_bytes)
        self._app: McpHttp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            from .app import McpHttp

            self._app = McpHttp(*self._args)
        await self._app(scope, receive, send)

    async def aclose(self) -> None:
        """End the sessions (at the server's shutdown)."""
        if self._app is not None:
            await self._app.aclose()
