"""`pluginsdk server start`: check what can be checked before uvicorn runs, say where it listens, then serve.

- a missing `server` extra (fastapi, uvicorn) is one sentence saying what to install;
- the address is bound once here (port 0: a free port is chosen), so a port in use or an unknown host is
  a clean error, and the printed URL is the one served — `app.apiUrl` follows it too (`--host`/`--port`
  are settings overrides, as if written in the configuration);
- while the store holds no API key, stderr says how to mint the first administrator key.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..config import Settings
    from . import Context

__all__ = ["start"]


def start(ctx: Context, host: str | None, port: int | None, workers: int | None = None) -> None:
    """Load settings with `host`/`port` as overrides, check the address, print the URL and hints, serve."""
    from .._gc import collect_garbage
    from ..errors import SDKError
    from ._output import emit_error

    collect_garbage()
    try:
        _check_extra()
        settings = _settings(ctx, host, port)
        if settings.api.port == 0:
            settings = _settings(ctx, settings.api.host, _free_port(settings.api.host))
        _check_bind(settings.api.host, settings.api.port)
        fresh = _no_api_keys(ctx, settings)
    except SDKError as err:
        emit_error(ctx, err.to_envelope())
        sys.exit(1)
    from ..server import serve

    url = f"http://{_url_host(settings.api.host)}:{settings.api.port}"
    click.echo(f"pluginsdk server listening on {url} (API docs: {url}/docs); Ctrl-C stops it.", err=True)
    if settings.mcp.http and importlib.util.find_spec("mcp") is not None:
        one = "" if (workers or settings.api.workers) <= 1 else " (sessions are per worker: serve it with one)"
        click.echo(f"MCP tools for remote assistants at {url}/mcp{one}.", err=True)
    if fresh:
        click.echo(_first_key_hint(ctx, settings, url), err=True)
    serve(settings, settings.api.host, settings.api.port, workers)


def _check_extra() -> None:
    from ..errors import ConfigurationError

    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            f"`server start` needs the `server` extra ({exc.name} is not installed): pip install 'pluginsdk[server]'.",
            key="server",
        ) from None


def _settings(ctx: Context, host: str | None, port: int | None) -> Settings:
    from ..config import load_settings

    overrides: dict[str, Any] = {"logging.level": ctx.options.get("log_level")}
    if host:
        overrides["api.host"] = host
    if port is not None:
        overrides["api.port"] = port
    return load_settings(config_path=ctx.options.get("config"), overrides=overrides)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _free_port(host: str) -> int:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _check_bind(host: str, port: int) -> None:
    """Bind the address once (and let go): a port in use or a host that is not here fails now, in a sentence."""
    import socket

    from ..errors import ConfigurationError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            sock.bind(address)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigurationError(f"Cannot listen on {host}:{port}: {reason}.", key="api.port") from None


def _no_api_keys(ctx: Context, settings: Settings) -> bool:
    """Whether the store holds no API key yet (a fresh store: nobody can call the server)."""
    import asyncio

    from ..sdk import PluginSDK

    async def count() -> int:
        async with PluginSDK(settings=settings, backend="local") as sdk:
            listed = await sdk.call("list_api_keys", max_items=1)
            return len(listed.model_dump().get("items") or [])

    try:
        return asyncio.run(count()) == 0
    except Exception:  # the hint is a courtesy: a store that cannot say is not a reason to refuse to start
        return False


def _first_key_hint(ctx: Context, settings: Settings, url: str) -> str:
    admin = settings.app.authProvider.adminUserId
    config = ctx.options.get("config")
    prefix = f"pluginsdk --config {config}" if config else "pluginsdk"
    return (
        "The store holds no API key yet. Mint the first administrator key on this machine (same store):\n"
        f"  {prefix} api-keys create first-admin {admin} --description 'first administrator key'\n"
        f"Its `api_key` is shown once; send it as `Authorization: <key>`, or `pluginsdk login {url}`."
    )
