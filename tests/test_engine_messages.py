"""The engine's messages name no interface's command: SDK, REST and MCP callers share them, and only the CLI
has `pluginsdk ...` commands and `--flags` (it adds its own hint: `pluginsdk/cli/_run.py`'s `_hint`).

Read from the source, not from one message: every function of the engine (`backends/local/`) that constructs
an `SDKError` is read whole, with the module constants it names, and none of its strings may name a command.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pluginsdk.errors as errors
from tests.support.sources import trees_of

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "backends" / "local"


def _cli_words() -> re.Pattern[str]:
    """A CLI command (`pluginsdk templates update`) or any option of the CLI (`--user`), read from the CLI."""
    import click

    from pluginsdk.cli import cli

    commands: list[str] = []
    flags: set[str] = set()
    stack: list[tuple[click.Command, click.Context | None]] = [(cli, None)]
    while stack:
        command, parent = stack.pop()
        ctx = click.Context(command, parent=parent)
        flags |= {o for p in command.params for o in p.opts + p.secondary_opts if o.startswith("--")}
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    stack.append((sub, ctx))
                    if command is cli:
                        commands.append(name)
    words = "|".join(re.escape(c) for c in sorted(commands))
    options = "|".join(re.escape(f) for f in sorted(flags, key=len, reverse=True))
    return re.compile(rf"\bpluginsdk\s+(?:{words})\b|(?<![\w-])(?:{options})(?![\w-])")


COMMAND = _cli_words()
_LOGGING = {"debug", "info", "warning", "error", "exception", "critical", "log"}


def _error_names() -> set[str]:
    """Every SDKError subclass by name: pluginsdk.errors' and the engine's own."""
    names = {name for name, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.SDKError)}
    for tree in trees_of(sorted(ENGINE.rglob("*.py"))):  # the engine's subclasses, to a fixed point
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(_name(b) in names for b in node.bases):
                names.add(node.name)
    return names


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _strings(node: ast.AST, constants: dict[str, list[str]]) -> list[str]:
    """The string literals under `node` (f-strings' literal parts too), with the module constants it names;
    docstrings and logging calls' arguments left out (a log is for the operator of the process)."""
    skip: set[int] = set()
    for sub in ast.walk(node):
        body = getattr(sub, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            skip.add(id(first.value))
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in _LOGGING:
            skip |= {id(n) for a in sub.args for n in ast.walk(a)}
    out: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in skip:
            out.append(sub.value)
        elif isinstance(sub, ast.Name) and sub.id in constants:
            out += constants[sub.id]
    return out


def engine_messages() -> dict[str, list[str]]:
    """For each engine function that constructs an SDKError: `path:function` -> its strings."""
    names = _error_names()
    found: dict[str, list[str]] = {}
    paths = sorted(ENGINE.rglob("*.py"))
    for path, tree in zip(paths, trees_of(paths), strict=True):
        constants = {
            t.id: _strings(node.value, {})
            for node in tree.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            raises = any(isinstance(c, ast.Call) and _name(c.func) in names for c in ast.walk(fn))
            if raises:
                found[f"{path.relative_to(ROOT)}:{fn.name}"] = _strings(fn, constants)
    return found


def test_the_reader_finds_the_engine_messages() -> None:
    """The walk is not empty and sees a known message, so the rule below cannot pass by reading nothing."""
    messages = engine_messages()
    assert len(messages) > 100
    assert any("no new launches until an operator clears it" in s for s in messages[
        "backends/local/provisioning/readiness.py:check_protection"
    ])  # fmt: skip
    assert COMMAND.search("run pluginsdk templates update") and COMMAND.search("pass --config FILE")
    assert not COMMAND.search("a running pluginsdk process")


def test_no_engine_message_names_a_cli_command_or_flag() -> None:
    offending = {
        where: hits
        for where, strings in engine_messages().items()
        if (hits := [s for s in strings if COMMAND.search(s)])
    }
    assert offending == {}
