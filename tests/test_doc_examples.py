"""The README's and the docs' code blocks that say they run do run, as written.

A fenced block's info string says what it is:

- ```` ```python run ```` — a whole script: run with this interpreter against a fresh store (the local
  provider), in a scratch directory, with a timeout;
- ```` ```python run server ```` — the same with a server on that store: `PLUGIN_API_URL` and
  `PLUGIN_API_KEY` (an administrator's key) are set, so `PluginSDK(backend="remote")` reaches it;
- ```` ```bash run ```` — shell commands (`bash -e`), `pluginsdk` and `python` on PATH, `scripts/` and
  `examples/` beside them as in the repository's root;
- ```` ```yaml file=NAME ```` (any language) — a file the page's runnable blocks use, written first.

Every ```` ```python ```` block is a runnable script (an SDK example is never a fragment). The blocks of
one page run in order on one store, so a later block sees what an earlier one made; then all of them once
more on that same store, as a reader who runs an example twice does: an example uses its own store or is
idempotent (it never fails on what its first run made).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
import yaml

from tests.support.backends import base_config

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
TIMEOUT = 90


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    flags: tuple[str, ...]
    body: str

    @property
    def runs(self) -> bool:
        return "run" in self.flags

    @property
    def file_name(self) -> str | None:
        return next((f.removeprefix("file=") for f in self.flags if f.startswith("file=")), None)


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        words = m.group(1).split()
        lang, flags = (words[0], tuple(words[1:])) if words else ("", ())
        found.append(Block(page.name, text.count("\n", 0, m.start()) + 1, lang, flags, m.group(2)))
    return found


RUNNABLE_PAGES = [p for p in PAGES if any(b.runs or b.file_name for b in blocks(p))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_block_is_a_runnable_script(page: Path) -> None:
    """A Python example a reader copies runs as it stands: no fragment with a bare `await`."""
    loose = [f"{b.page}:{b.line}" for b in blocks(page) if b.lang == "python" and not b.runs]
    assert not loose, f"```python blocks not marked `run` (make them whole scripts): {loose}"


def _env(work: Path, config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")}
    bindir = str(Path(sys.executable).parent)
    env.update(
        PLUGIN_CONFIG=str(config),
        HOME=str(work / "home"),
        XDG_DATA_HOME=str(work / "home" / "data"),
        XDG_CONFIG_HOME=str(work / "home" / "config"),
        PATH=bindir + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")])),
    )
    return env


@contextmanager
def _server(config: dict[str, object], keys: dict[str, str]) -> Iterator[dict[str, str]]:
    """A server on `config`'s store, with an administrator's key (made once per store, kept in `keys`)."""
    from tests.support.remote import admin_key, running_server

    if "key" not in keys:
        keys["key"] = anyio.run(admin_key, config)
    with running_server(config) as url:
        yield {"PLUGIN_API_URL": url, "PLUGIN_API_KEY": keys["key"]}


def _run(block: Block, work: Path, env: dict[str, str], again: bool = False) -> None:
    where = f"{block.page}:{block.line}" + (" (run a second time on the same store)" if again else "")
    if block.lang == "python":
        script = work / f"block_{block.line}.py"
        script.write_text(block.body, encoding="utf-8")
        cmd = [sys.executable, str(script)]
    elif block.lang == "bash":
        cmd = ["bash", "-e", "-c", block.body]
    else:
        raise AssertionError(f"{where}: cannot run a ```{block.lang} block")
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, f"{where} exited {done.returncode}\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: p.name)
def test_runnable_blocks_run(page: Path, tmp_path: Path) -> None:
    page_blocks = blocks(page)
    config = base_config(tmp_path)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    env = _env(tmp_path, config_file)
    for shipped in ("scripts", "examples"):  # blocks run "from the repository's root" find these
        (tmp_path / shipped).symlink_to(ROOT / shipped)
    for b in page_blocks:
        if b.file_name:
            (tmp_path / b.file_name).write_text(b.body, encoding="utf-8")
    keys: dict[str, str] = {}
    for again in (False, True):  # the second time on the store the first run left
        for b in page_blocks:
            if not b.runs:
                continue
            if "server" in b.flags:
                with _server(config, keys) as extra:
                    _run(b, tmp_path, {**env, **extra}, again)
            else:
                _run(b, tmp_path, env, again)


async def test_mcp_page_profile_counts_and_error_are_the_servers(tmp_path: Path) -> None:
    """docs/mcp.md's tool-profile table counts and its error example are what the server answers."""
    import json

    from mcp import Client

    from pluginsdk import PluginSDK
    from pluginsdk.mcp import create_server

    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    documented = {m[1]: int(m[2]) for m in re.finditer(r"^\| `(\w+)`(?: \(default\))? \| (\d+) \|", text, re.MULTILINE)}
    assert set(documented) == {"provisioning", "auth", "policy", "federation", "machine", "all"}
    example = next(json.loads(b.body) for b in blocks(ROOT / "docs" / "mcp.md") if '"tool": "get_template"' in b.body)
    async with PluginSDK(config=base_config(tmp_path)) as sdk:
        for profile, count in documented.items():
            async with Client(create_server(sdk, profile=profile)) as client:
                assert len((await client.list_tools()).tools) == count, profile
        async with Client(create_server(sdk)) as client:
            failed = await client.call_tool("get_template", {"template_id": "nope"})
    assert failed.is_error and failed.structured_content is None
    assert json.loads(failed.content[0].text) == example  # type: ignore[union-attr]


def test_readme_commands_install_what_the_readme_shows() -> None:
    """The first command installs the extras `server start` and `mcp serve` need; the second is what CI runs."""
    first, second = (
        line for line in blocks(ROOT / "README.md")[0].body.splitlines() if line.startswith("python3 -m venv")
    )
    extras = re.search(r"-e '\.\[([\w,]+)\]'", first)
    assert extras and {"server", "mcp"} <= set(extras[1].split(",")), first
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for step in second.split(" && "):
        assert step in ci, f"README's test command step {step!r} is not in .ci/run"


OTHER_TOOLS = {
    "--check": "python -m pluginsdk._stubgen",
    "--help": "every command",
    "--flag": "cli.md's pattern of boolean options",
    "--no-flag": "cli.md's pattern of boolean options",
    "--kebab-case": "cli.md's naming pattern",
    "--options": "cli.md's pattern",
    "--cli": "the MCP Inspector",
    "--ignore-scripts": "npm ci",
    "--strict": "tsc",
    "--tool-name": "the MCP Inspector",
    "--tool-arg": "the MCP Inspector",
    "--uri": "the MCP Inspector",
    "--transport": "the MCP Inspector and Claude Code (MCP over HTTP)",
    "--header": "Claude Code and the MCP Inspector from 0.17 (MCP over HTTP)",
    "--import": "node (a module preloaded into the MCP Inspector)",
    "--url": "openapi-python-client",
    "--meta": "openapi-python-client",
    "--clean": "pg_restore",
    "--dbname": "pg_restore",
    "--fork": "unshare",
    "--time": "unshare",
    "--boottime": "unshare",
}
"""Options the pages name that belong to other programs (benchmarks.md names bench/ scripts' options)."""


def test_every_option_the_docs_name_exists() -> None:
    """An option written in README or docs is one the CLI has (no `--input-file` where it is `--file`)."""
    import click

    from pluginsdk.cli import cli
    from pluginsdk.cli._build import command_for
    from pluginsdk.operations import CATALOG

    known: set[str] = set()

    def walk(cmd: click.Command) -> None:
        for p in cmd.params:
            known.update(o for o in (*p.opts, *p.secondary_opts) if o.startswith("--"))
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                if (sub := cmd.get_command(ctx, name)) is not None:
                    walk(sub)

    walk(cli)
    for spec in CATALOG.values():
        walk(command_for(spec))
    unknown = {
        (m.group(0), page.name)
        for page in PAGES
        if page.name != "benchmarks.md"
        for m in re.finditer(r"(?<![\w-])--[a-z][a-z0-9-]+", page.read_text(encoding="utf-8"))
        if m.group(0) not in known and m.group(0) not in OTHER_TOOLS
    }
    assert not unknown, sorted(unknown)


async def test_policy_page_explain_table_is_what_the_cli_prints(tmp_path: Path) -> None:
    """docs/policy.md's `auth explain ... --format table` output, for its own end-to-end policy."""
    from pluginsdk import PluginSDK

    config = base_config(tmp_path)
    async with PluginSDK(config=config) as admin:
        await admin.create_role(role_name="editor", description="edits project documents")
        await admin.import_constraints_template(
            constraints=[
                {
                    "constraintId": "edit-projects",
                    "name": "editors",
                    "description": "edit project documents",
                    "objectType": "asset",
                    "criteriaAnd": [{"field": "databaseId", "operator": "starts_with", "value": "proj-"}],
                    "groupPermissions": [
                        {"groupId": "editor", "permission": m, "permissionType": "allow"} for m in ("GET", "PUT")
                    ],
                }
            ]
        )
        await admin.create_user_roles("alice", ["editor"])
    text = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    command = re.search(r"`pluginsdk (auth explain [^`]+)`", text.replace("\n", " "))
    assert command, "policy.md names no `pluginsdk auth explain ...` command"
    shown = next(b.body for b in blocks(ROOT / "docs" / "policy.md") if b.body.startswith("KIND"))
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pluginsdk", *command[1].split()],
        env=_env(tmp_path, config_file),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == shown.split()
