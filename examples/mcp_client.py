"""Drive `pluginsdk mcp serve --stdio` the way an MCP client (Claude Desktop, an agent) does.

Starts the server as a subprocess, lists its tools, creates a template and requests machines through tools,
reads the `machines://` resource, shows a failing tool's `error` object, and returns the machines.
Needs the `mcp` extra. `--store PATH` uses another SQLite file. Safe to run again.

    python examples/mcp_client.py [--store PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


async def main(store: str | None) -> None:
    # A stdio client passes the server only a minimal environment: hand PLUGIN_* settings over explicitly.
    env = {k: v for k, v in os.environ.items() if k.startswith("PLUGIN_")}
    if store:
        env["PLUGIN_STORAGE_PATH"] = store
    server = StdioServerParameters(command=sys.executable, args=["-m", "pluginsdk", "mcp", "serve", "--stdio"], env=env)
    async with Client(server) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        print(f"{len(tools)} tools: {', '.join(tools[:4])}, ...")

        created = await client.call_tool("create_template", {"template_id": "mcp-demo", "image_id": "ami-0123"})
        print("create_template:", "exists already" if created.is_error else "created")

        req = await client.call_tool("request_machines", {"template_id": "mcp-demo", "count": 2, "wait": True})
        request = req.structured_content
        machine_ids = [m["machine_id"] for m in request["machines"]]
        print(f"request {request['request_id']}: {request['status']}, machines {machine_ids}")

        listing = (await client.read_resource("machines://")).contents[0]
        print(f"machines:// lists {json.loads(listing.text)['total_count']} machines")  # type: ignore[union-attr]

        failed = await client.call_tool("get_template", {"template_id": "no-such-template"})
        error = json.loads(failed.content[0].text)["error"]  # type: ignore[union-attr]  # a failure is text only
        print("failing tool -> error object:", json.dumps(error, indent=2))

        ret = await client.call_tool("return_machines", {"machine_ids": machine_ids})
        print(f"return request {ret.structured_content['request_id']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="SQLite file to use instead of the default store")
    args = parser.parse_args()
    asyncio.run(main(args.store))
