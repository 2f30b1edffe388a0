"""The MCP server: `tools/list` size per tool profile, and a tool call over HTTP against the REST call behind it.

    python bench/mcp_bench.py [--calls 2000] [--rounds 5] [--sizes-only | --http-only]

Sizes: bytes are the `tools/list` result as compact JSON (what the server writes on stdio, less the JSON-RPC
frame). "before" rebuilds the same tools the way the server did before issue 13: pydantic's schemas as they
come, with a `title` per tool. The build time is the server's one-off cost of deriving its tools (median of
5). Sizes do not depend on the machine; the times do.

HTTP: one server process (`serve()`, as `pluginsdk server start` runs it) on a seeded store; one client on a
keep-alive connection reads the same template by id, authenticated with the same API key, through
`GET /api/v1/templates/{id}` and through `tools/call get_template` on `/mcp` (a Streamable HTTP session opened
once; answered with one JSON body, as /mcp answers a request that asks for no progress), and as a
2026-07-28 single exchange (no session); a fourth path asks for progress, which /mcp answers with an
event stream (no notification comes: the read does not wait). The two alternate in `--rounds` blocks of `--calls`
sequential calls each, so both see the same box; the table gives each one's p50 and p90, and the MCP call's
p50 minus the REST call's (the target: at most 2 ms) and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
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


async def sizes() -> None:
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


ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
VERSION = "2025-11-25"


async def seed(config: dict[str, Any]) -> str:
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        key = await sdk.create_api_key(api_key_name="bench", description="benchmark key", user_id="administrator")
        return str(key.api_key)


def open_session(http: httpx.Client, url: str) -> str:
    init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    opened = http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    opened.raise_for_status()
    sid = opened.headers["mcp-session-id"]
    http.headers.update({"mcp-session-id": sid, "mcp-protocol-version": VERSION})
    http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}).raise_for_status()
    return sid


def timed(call: Any, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t)
    return samples


def http_calls(calls: int, rounds: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from server_bench import ROOT, serve_checkout, stop

    with tempfile.TemporaryDirectory() as tmp:
        config = {"storage": {"path": str(Path(tmp) / "mcp.db")}}
        key = asyncio.run(seed(config))
        proc, url = serve_checkout(ROOT, config, Path(tmp) / "server.log")
        try:
            samples = measure(url, key, calls, rounds)
        finally:
            stop(proc)
    print_http(samples, calls, rounds)


MODERN = "2026-07-28"
MODERN_HEADERS = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "get_template"}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def measure(url: str, key: str, calls: int, rounds: int) -> dict[str, list[float]]:
    """Samples per path: REST, an MCP session (2025-11-25: the TypeScript SDK's and the Inspector's), and
    MCP 2026-07-28's single exchange (no session; the Python SDK's)."""
    auth = {"authorization": f"Bearer {key}"}
    params = {"name": "get_template", "arguments": {"template_id": "web"}}
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    modern = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": META}})
    progress = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": {"progressToken": 1}}}
    streamed = json.dumps(progress).encode()
    with (
        httpx.Client(headers=auth) as rest_http,
        httpx.Client(headers={**auth, **ACCEPT}) as mcp_http,
        httpx.Client(headers={**auth, **ACCEPT, **MODERN_HEADERS}) as modern_http,
    ):
        open_session(mcp_http, url)

        def rest_call() -> None:
            answer = rest_http.get(f"{url}/api/v1/templates/web")
            assert answer.status_code == 200, answer.text

        def mcp_call() -> None:
            answer = mcp_http.post(f"{url}/mcp", content=payload)
            assert answer.status_code == 200 and '"isError":false' in answer.text, answer.text

        def streamed_call() -> None:
            answer = mcp_http.post(f"{url}/mcp", content=streamed)
            assert answer.status_code == 200 and '"isError":false' in answer.text, answer.text

        def modern_call() -> None:
            answer = modern_http.post(f"{url}/mcp", content=modern)
            assert answer.status_code == 200 and '"isError":false' in answer.text, answer.text

        paths = {"rest": rest_call, "session": mcp_call, "modern": modern_call, "stream": streamed_call}
        for call in paths.values():
            timed(call, 200)  # warm every path (the MCP transport loads on its first request)
        samples: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(rounds):
            for name, call in paths.items():
                samples[name] += timed(call, calls)
    return samples


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


LABELS = {
    "rest": "REST `GET /api/v1/templates/{id}`",
    "session": "MCP `tools/call get_template`, session (2025-11-25)",
    "modern": "MCP `tools/call get_template`, 2026-07-28 single exchange",
    "stream": "MCP `tools/call get_template`, session, asking for progress (event stream)",
}


def print_http(samples: dict[str, list[float]], calls: int, rounds: int) -> None:
    print(f"\n{rounds} rounds x {calls} sequential calls per path, one keep-alive connection each\n")
    print("| path | p50 (ms) | p90 (ms) | p50 over REST (ms) | ratio |")
    print("|---|---:|---:|---:|---:|")
    rest = pct(samples["rest"], 0.5)
    for name, values in samples.items():
        p50 = pct(values, 0.5)
        print(f"| {LABELS[name]} | {p50:.3f} | {pct(values, 0.9):.3f} | {p50 - rest:+.3f} | {p50 / rest:.2f} |")
    worst = max(pct(samples[name], 0.5) for name in ("session", "modern")) - rest
    verdict = "met" if worst <= 2 else "NOT met"
    print(f"\nTarget: an MCP call (no progress asked) adds <= 2 ms p50 over REST: {verdict} (+{worst:.3f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000, help="sequential calls per path per round")
    ap.add_argument("--rounds", type=int, default=5, help="alternating REST and MCP blocks")
    ap.add_argument("--sizes-only", action="store_true", help="only the tools/list sizes")
    ap.add_argument("--http-only", action="store_true", help="only the HTTP call comparison")
    args = ap.parse_args()
    if not args.http_only:
        asyncio.run(sizes())
    if not args.sizes_only:
        http_calls(args.calls, args.rounds)


if __name__ == "__main__":
    main()
