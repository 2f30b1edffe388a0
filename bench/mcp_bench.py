"""Size of the MCP server's `tools/list` per tool profile, against the listing before compaction and the budget.

    python bench/mcp_bench.py

Bytes are the `tools/list` result as compact JSON (what the server writes on stdio, less the JSON-RPC frame).
"before" rebuilds the same tools the way the server did before issue 13: pydantic's schemas as they come,
with a `title` per tool. The build time is the server's one-off cost of deriving its tools (median of 5).
Sizes do not depend on the machine; the times do.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pydantic

from pluginsdk import PluginSDK
from pluginsdk.mcp.profiles import PROFILES, resolve_profile
from pluginsdk.mcp.tools import ToolSet, tool_specs
from pluginsdk.operations import OperationSpec

BUDGET = 60_000


def listing_bytes(tools: list[types.Tool]) -> int:
    return len(types.ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True).encode())


def before(name: str, spec: OperationSpec) -> types.Tool:
    """A tool as described before compaction (uncompacted schemas, title, aliases in descriptions)."""
    result = spec.result_type
    output = None
    if isinstance(result, type) and issubclass(result, pydantic.BaseModel):
        output = result.model_json_schema(mode="serialization", by_alias=False)
    return types.Tool(
        name=name,
        title=spec.summary,
        description=spec.summary + (f"\n\n{spec.description}" if spec.description else ""),
        input_schema=spec.input_schema(),
        output_schema=output,
        annotations=types.ToolAnnotations(read_only_hint=spec.kind == "query"),
    )


async def main() -> None:
    rows: list[tuple[str, int, int, int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with PluginSDK(config={"storage": {"path": str(Path(tmp) / "b.db")}}) as sdk:
            for label in (*PROFILES, "all"):
                profile = resolve_profile(label)
                times: list[float] = []
                toolset: Any = None
                for _ in range(5):
                    t0 = time.perf_counter()
                    toolset = ToolSet(sdk, profile)
                    times.append((time.perf_counter() - t0) * 1000)
                old = [before(n, s) for n, s in tool_specs(profile).items()]
                rows.append(
                    (
                        label,
                        len(toolset.tools),
                        listing_bytes(old),
                        listing_bytes(toolset.tools),
                        statistics.median(times),
                    )
                )
    print(f"| profile | tools | before (bytes) | now (bytes) | now / before | now / {BUDGET:,} budget | build (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, count, old_bytes, new_bytes, ms in rows:
        mark = " (default)" if label == "provisioning" else ""
        print(
            f"| {label}{mark} | {count} | {old_bytes:,} | {new_bytes:,} | {new_bytes / old_bytes:.2f} "
            f"| {new_bytes / BUDGET:.2f} | {ms:.0f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
