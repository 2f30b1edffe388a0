"""The engine states facts; each interface adds its own hints.

An engine error names no CLI command — SDK, REST and MCP callers read the same message — and the CLI prints the
command that helps beside it. The engine reads the machine reasons it shares with the scheduler strategies from
the models (`StatusReason`), never from an interface's modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from pluginsdk import NotFoundError, PluginSDK, StateConflictError
from tests.auth.grants import failure
from tests.support.cli import cli_environment, invoke
from tests.support.sources import Module, our_modules

INTERFACES = ("pluginsdk.cli", "pluginsdk.mcp", "pluginsdk.server", "pluginsdk.schedulers")
"""What the engine (`backends.local`) never imports: the interfaces and the scheduler strategies."""


async def test_an_unknown_request_is_a_fact_without_a_command(sdk: PluginSDK) -> None:
    err = await failure(sdk.get_request_status(["req-nope"]))
    assert isinstance(err, NotFoundError) and err.message == "Request 'req-nope' not found."


async def test_a_lock_out_refusal_names_break_glass_but_no_command(sdk: PluginSDK) -> None:
    err = await failure(sdk.delete_user_roles("administrator"))
    assert isinstance(err, StateConflictError) and "break-glass" in err.message
    assert "pluginsdk " not in err.message and "--user" not in err.message


def test_the_cli_adds_the_command_that_helps(tmp_path: Path) -> None:
    env = cli_environment(tmp_path)
    missing = invoke(env, "requests", "status", "req-nope")
    assert missing.code == 1 and missing.json()["error"] == "Request 'req-nope' not found."
    assert "See `pluginsdk requests list` for the ones that exist." in missing.err
    refused = invoke(env, "user-roles", "delete", "administrator")
    assert refused.code == 1 and "`pluginsdk auth break-glass --user ID`" in refused.err
    assert "pluginsdk " not in refused.json()["error"]


def _imports(module: Module) -> Iterator[tuple[str, int]]:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = module.absolute(node.module, node.level)
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)


def test_the_engine_imports_no_interface() -> None:
    """Its messages naming no command is tests/test_engine_messages.py's."""
    engine = [m for name, m in our_modules().items() if name.startswith("backends.local")]
    reaching = [
        f"{m.path.name}:{line} imports {target}"
        for m in engine
        for target, line in _imports(m)
        if target.startswith(INTERFACES)
    ]
    assert not reaching
