"""The MCP server: the low-level `mcp` Server with handlers over the catalog's tools and the resources.

The low-level Server (not MCPServer) because every tool here is data: its schema comes from the catalog,
not from a Python signature, and a failure must answer the spec's `error` object, which MCPServer would
flatten into a sentence.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from ..constants import VERSION
from ..waiting import Progress, Report, when_rising
from .profiles import ALL, PROFILES, resolve_profile
from .resources import ResourceSet
from .tools import ToolSet

if TYPE_CHECKING:
    from ..sdk import PluginSDK
    from ..waiting import Executor

__all__ = ["build_server", "create_server", "serve_stdio"]

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Provision compute machines from templates and manage access. Tools mirror the pluginsdk SDK methods; "
    "resources templates://, requests://, machines:// and providers:// list what exists. A failing tool "
    "answers isError with a JSON text holding an `error` object (type, message, tool, arguments). "
    "This server lists the tools of profile {profile}; the profiles are {profiles} (server option --profile)."
)

Ctx = ServerRequestContext[Any]


ExecutorOf = Callable[[Ctx], "Executor | None"]
"""What runs one request's operations: None for the server's own SDK, else the caller's executor."""


def create_server(sdk: PluginSDK, profile: str | None = None) -> Server[Any]:
    """An MCP server whose tools and resources run on `sdk` (already started; the caller closes it).

    `profile` names the tool profile(s), comma-separated (see `profiles.py`); None takes
    `PLUGIN_MCP_PROFILE`, then `mcp.profile` of the SDK's configuration, then `provisioning`.
    """
    chosen = resolve_profile(profile, sdk.settings.mcp.profile)
    return build_server(ToolSet(sdk, chosen), ResourceSet(sdk), lambda ctx: None)


def build_server(tools: ToolSet, resources: ResourceSet, executor_of: ExecutorOf) -> Server[Any]:
    """The MCP server over `tools` and `resources`; every call and read runs on `executor_of(ctx)`
    (the remote transport's: the request's caller, `pluginsdk.server.remote_mcp`)."""

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.tools)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        executor = executor_of(ctx)
        return await tools.call(params.name, params.arguments, progress_notifier(ctx), executor)

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources.resources())

    async def list_resource_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=resources.templates())

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await resources.read(str(params.uri), executor_of(ctx))

    schemas = {tool.name: tool.input_schema for tool in tools.tools}
    return Server(
        "pluginsdk",
        version=VERSION,
        title="pluginsdk",
        instructions=INSTRUCTIONS.format(profile=",".join(tools.profile), profiles=", ".join((*PROFILES, ALL))),
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


def progress_notifier(ctx: Ctx) -> Report:
    """Readings of a waiting request as `notifications/progress` for the call `ctx` answers.

    progress = machines running, total = machines requested, message = the CLI's progress line. Sent only
    when the running count rises (MCP requires `progress` to increase), through `session.report_progress`,
    which sends nothing unless the caller asked for progress (a `progressToken` in the request's `_meta`,
    or a progress callback on the SDK's in-process client).
    """

    async def notify(progress: Progress) -> None:
        try:
            await ctx.session.report_progress(progress.running, progress.total, progress.text())
        except Exception:  # a lost notification must not fail the call that submitted the request
            log.warning("progress notification for %s failed", progress.request_id, exc_info=True)

    return when_rising(notify)


async def serve_stdio(profile: str | None = None, **sdk_options: Any) -> None:
    """Serve MCP on stdin/stdout until stdin closes; `profile` as for `create_server`, `sdk_options` go to PluginSDK.

    The stdio transport is entered first: from then on fd 1 points at stderr, so nothing but protocol
    reaches stdout, whatever starting the SDK (or a stray print) writes.
    """
    from mcp.server.stdio import stdio_server

    from ..sdk import PluginSDK

    async with stdio_server() as (read_stream, write_stream), PluginSDK(background=True, **sdk_options) as sdk:
        configure_logging(sdk.settings.logging.level)
        server = create_server(sdk, profile)
        log.info("MCP server ready on stdio (pid %d)", os.getpid())
        await server.run(read_stream, write_stream, server.create_initialization_options())


def configure_logging(level: str | None) -> None:
    """All diagnostics to stderr (stdout is the protocol's); a no-op if the CLI configured logging already."""
    logging.basicConfig(level=level or "WARNING", stream=sys.stderr)
