"""`pluginsdk mcp serve --stdio`: the MCP server on stdin/stdout, attached to the CLI's root group.

Only click is imported here; `mcp` loads when the command runs.
"""

from __future__ import annotations

import sys
from typing import Any

import click

__all__ = ["mcp"]


@click.group()
def mcp() -> None:
    """Run the MCP server (tools and resources for AI assistants)."""


@mcp.command("serve")
@click.option("--stdio", "stdio", is_flag=True, default=True, help="Speak MCP on stdin/stdout (the only transport).")
@click.option(
    "--profile",
    metavar="NAMES",
    default=None,
    help="Tools to list: provisioning (default), auth or all; comma-separated to join "
    "(else PLUGIN_MCP_PROFILE, else mcp.profile in the config).",
)
@click.pass_obj
def serve(ctx: Any, stdio: bool, profile: str | None) -> None:
    """Serve MCP on stdin/stdout until stdin closes; diagnostics go to stderr, stdout carries only protocol.

    Uses the global --config, --backend, --scheduler and --log-level (or their PLUGIN_* variables).
    """
    import functools

    import anyio

    from .._gc import collect_garbage
    from ..errors import SDKError
    from . import serve_stdio

    collect_garbage()
    options: dict[str, Any] = getattr(ctx, "options", {})
    run = functools.partial(
        serve_stdio,
        profile,
        config_path=options.get("config"),
        backend=options.get("backend"),
        scheduler=options.get("scheduler"),
    )
    failure: SDKError | None = None
    try:
        anyio.run(run)
    except* SDKError as group:  # raised inside the transport's task group, so it arrives grouped
        failure = _first(group)
    if failure is not None:
        click.echo(f"Error: {failure.message} ({failure.code})", err=True)
        sys.exit(1)


def _first(group: BaseExceptionGroup[Any]) -> Any:
    leaf = group.exceptions[0]
    return _first(leaf) if isinstance(leaf, BaseExceptionGroup) else leaf
