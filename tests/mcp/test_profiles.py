"""Tool profiles: what each lists, how one is chosen, and the size of `tools/list` on the wire per profile."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pluginsdk.errors import ConfigurationError
from pluginsdk.mcp.profiles import PROFILES, module_of, resolve_profile
from pluginsdk.mcp.tools import tool_specs
from pluginsdk.operations import CATALOG
from tests.mcp.helpers import SERVE, connect, failure, read_until, rpc, stdio_env
from tests.support.backends import open_sdk

BUDGET = 60_500  # the default listing: 59,908 bytes before `as_of` (consistent active pages) took 60,1xx
"""Bytes of the default `tools/list` result on the wire."""


def test_every_tool_is_in_exactly_one_named_profile() -> None:
    modules = {module_of(spec) for spec in CATALOG.values() if spec.mcp_names}
    named = [m for profile in PROFILES.values() for m in profile]
    assert sorted(named) == sorted(set(named)), "a module is in two profiles"
    assert modules == set(named), "a module with tools is in no profile (add it to pluginsdk/mcp/profiles.py)"
    provisioning, auth, every = tool_specs(("provisioning",)), tool_specs(("auth",)), tool_specs(("all",))
    policy, federation, machine = tool_specs(("policy",)), tool_specs(("federation",)), tool_specs(("machine",))
    assert not set(provisioning) & set(auth) and not set(policy) & (set(provisioning) | set(auth))
    assert not set(federation) & (set(provisioning) | set(auth) | set(policy))
    assert set(machine) == {"mark_machine_ready"}  # a startup script's call, in no assistant's profile
    every_named = tool_specs(("provisioning", "auth", "policy", "federation", "machine"))
    assert {**provisioning, **auth, **policy, **federation, **machine} == every == every_named
    assert {"check_access", "explain_access", "who_can", "what_if", "list_audit_records"} <= set(policy)
    assert {"request_machines", "return_machines", "list_templates", "check_provider_health"} <= set(provisioning)
    assert {"login", "create_api_key", "create_role", "create_constraint"} <= set(auth)


def test_profile_names_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLUGIN_MCP_PROFILE", raising=False)
    assert resolve_profile(None) == ("provisioning",)
    assert resolve_profile(None, "auth") == ("auth",)
    assert resolve_profile(" Auth , provisioning,auth") == ("auth", "provisioning")
    monkeypatch.setenv("PLUGIN_MCP_PROFILE", "all")
    assert resolve_profile(None, "auth") == ("all",)  # environment over configuration
    assert resolve_profile("auth", "provisioning") == ("auth",)  # the option over both
    for bad in ("admin", "auth,admin", ","):
        with pytest.raises(ConfigurationError) as exc:
            resolve_profile(bad)
        assert "provisioning, auth, policy, federation, machine, all" in exc.value.message
    with pytest.raises(ConfigurationError):
        resolve_profile(None, ["auth"])


async def test_server_lists_its_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLUGIN_MCP_PROFILE", raising=False)
    async with open_sdk("local", tmp_path) as sdk, connect(sdk, profile=None) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert listed == set(tool_specs(("provisioning",)))
        elsewhere = failure(await client.call_tool("create_api_key", {"api_key_name": "k"}))
        assert elsewhere["type"] == "HandlerDiscoveryError" and elsewhere["details"]["profile"] == "auth"
        assert "--profile auth" in elsewhere["message"]
        assert "no_such" in failure(await client.call_tool("no_such", {}))["message"]


async def test_configured_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLUGIN_MCP_PROFILE", raising=False)
    async with open_sdk("local", tmp_path, mcp={"profile": "auth"}) as sdk:
        async with connect(sdk, profile=None) as client:
            assert {t.name for t in (await client.list_tools()).tools} == set(tool_specs(("auth",)))
        monkeypatch.setenv("PLUGIN_MCP_PROFILE", "all")
        async with connect(sdk, profile=None) as client:
            assert len((await client.list_tools()).tools) == len(tool_specs())


def listing_bytes(env: dict[str, str], *extra: str) -> tuple[int, int]:
    """(bytes of the `tools/list` reply's result as the server wrote it on stdout, number of tools)."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    proc = subprocess.Popen(
        [sys.executable, *SERVE, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(rpc(1, "initialize", hello) + rpc(None, "notifications/initialized") + rpc(2, "tools/list"))
        proc.stdin.flush()
        by_id, _ = read_until(proc, {1, 2})
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = by_id[2]["result"]
    return len(json.dumps(result, separators=(",", ":")).encode()), len(result["tools"])


def test_listing_sizes(tmp_path: Path) -> None:
    """The default listing fits the budget; so does `auth`; sizes as docs/mcp.md records them."""
    env = stdio_env(tmp_path, boot_delay=0.05)
    runs = {
        "default": (),
        "auth": ("--profile", "auth"),
        "policy": ("--profile", "policy"),
        "federation": ("--profile", "federation"),
        "machine": ("--profile", "machine"),
        "all": ("--profile", "all"),
    }
    with ThreadPoolExecutor(len(runs)) as pool:
        sizes = dict(zip(runs, pool.map(lambda extra: listing_bytes(env, *extra), runs.values()), strict=True))
    print(sizes)  # shown with -s; docs/mcp.md and docs/benchmarks.md quote these
    assert sizes["default"][1] == len(tool_specs(("provisioning",)))
    assert sizes["default"][0] <= BUDGET
    assert sizes["auth"][0] <= BUDGET
    assert sizes["policy"][0] <= BUDGET
    assert sizes["federation"][0] <= BUDGET
    assert sizes["machine"][0] <= BUDGET
    named = ("default", "auth", "policy", "federation", "machine")
    assert sizes["all"][1] == len(tool_specs()) == sum(sizes[n][1] for n in named)
    assert sizes["all"][0] < 147_000  # 180,997 bytes for the 85 tools before compaction; 145,988 on 2026-11-28


def test_bad_profile_is_a_sentence_on_stderr(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, *SERVE, "--profile", "admin"],
        input="",
        capture_output=True,
        text=True,
        env=stdio_env(tmp_path, boot_delay=0.05),
        timeout=60,
        check=False,
    )
    assert res.returncode == 1 and res.stdout == ""
    assert "Unknown MCP tool profile admin" in res.stderr and "Traceback" not in res.stderr
