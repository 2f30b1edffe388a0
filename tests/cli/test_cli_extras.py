"""CLI features beyond the catalog: the static help index, `login` (OS keyring), `--wait` progress, -d input."""

from __future__ import annotations

import json
import os
import pty
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
import pytest

from tests.support.cli import FAST, PLUGINSDK, cli_environment, invoke


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Machines that take 1.2 s to start (so `--wait` shows progress), and a keyring in a file."""
    return cli_environment(
        tmp_path,
        FAST.replace("boot_delay: 0.05", "boot_delay: 1.2"),
        PYTHON_KEYRING_BACKEND="tests.cli.keyring_file.FileKeyring",
        PLUGINSDK_TEST_KEYRING=str(tmp_path / "keyring.json"),
    )


def run(env: dict[str, str], *args: str, ok: bool = True, stdin: str | None = None) -> Any:
    res = invoke(env, *args, stdin=stdin)
    assert (res.code == 0) == ok, res.out + res.err
    return res.json()


def test_help_imports_neither_the_catalog_nor_pydantic() -> None:
    code = (
        "import sys\nfrom pluginsdk.cli import cli\n"
        "for argv in (['--help'], ['templates', '--help'], ['--version']):\n"
        "    try:\n        cli(argv, prog_name='pluginsdk')\n    except SystemExit:\n        pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'sqlalchemy', 'httpx', 'yaml')"
        " or m.split('.')[0] in ('mcp', 'mcp_types')"
        " or m.startswith(('pluginsdk.operations', 'pluginsdk.models', 'pluginsdk.waiting', 'backends')))\n"
        "print(heavy, file=sys.stderr)\nassert not heavy\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert "Commands:" in res.stdout and "request" in res.stdout and "login" in res.stdout


def test_root_help_lines_of_the_extra_commands_are_their_own() -> None:
    """`pluginsdk --help` lists `login`, `mcp`, `server` and `slurm` from `EXTRA` without importing them (slurm
    brings asyncio): each line there is the first line of the command's own help."""
    from pluginsdk.cli import EXTRA, Root, cli

    ctx = click.Context(cli)
    for name, summary in EXTRA.items():
        command = Root.get_command(cli, ctx, name)
        assert command is not None and command.help is not None
        assert summary == command.help.strip().splitlines()[0], name


def test_a_command_imports_only_its_own_operations(env: dict[str, str]) -> None:
    """A scheduler's `templates list` builds the template operations' classes, not the whole catalog's.

    Nor does it load the waiting helper (`--wait` only) or `mcp`.
    """
    code = (
        "import sys\nfrom pluginsdk.cli import cli\n"
        "try:\n    cli(['--format', 'json', 'templates', 'list'], prog_name='pluginsdk')\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "ops = sorted(m for m in sys.modules if m.startswith(('pluginsdk.operations.', 'pluginsdk.models.')))\n"
        "print(ops, file=sys.stderr)\n"
        "assert 'pluginsdk.operations.templates' in ops\n"
        "assert not {'pluginsdk.operations.api_keys', 'pluginsdk.operations.users', 'pluginsdk.operations.requests',"
        " 'pluginsdk.models.auth_results'} & set(ops)\n"
        "assert not {'pluginsdk.waiting', 'mcp', 'mcp_types'} & set(sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["templates"] == []


def test_a_call_that_configures_no_app_builds_no_auth_settings_model(env: dict[str, str]) -> None:
    """The auth service's typed settings (`pluginsdk.config.AppSettings` and its groups) and Slurm's are created
    only when used: a call whose configuration gives neither `app` nor `slurm` never imports their modules, and
    builds the validators of no other group it leaves at its defaults (cold start)."""
    code = (
        "import sys\nfrom pluginsdk.cli import cli\n"
        "try:\n    cli(['--format', 'json', 'templates', 'list'], prog_name='pluginsdk')\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "lazy = {'pluginsdk.config.app', 'pluginsdk.config.identity', 'pluginsdk.config.slurm'}\n"
        "assert not lazy & set(sys.modules), sorted(lazy & set(sys.modules))\n"
        "from pluginsdk import config\n"
        "groups = [getattr(config, n) for n in config.__all__ if n.endswith('Settings') and n != 'Settings']\n"
        "built = [g.__name__ for g in groups if g.__pydantic_complete__]\n"
        "print(built, file=sys.stderr)\nassert len(groups) >= 11 and not built\n"
        "app = {'authProvider': {'useManaged': {'tokenMinutes': '5'}}}\n"
        "s = config.load_settings(config={'app': app}, environ={})\n"
        "assert s.app.authProvider.useManaged.tokenMinutes == 5 and config.AppSettings.__pydantic_complete__\n"
    )
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["templates"] == []


@pytest.mark.parametrize("plugins", [None, ""])
def test_console_script_skips_pydantic_plugin_discovery_unless_asked(env: dict[str, str], plugins: str | None) -> None:
    """The entry point runs without the collector and without scanning entry points, unless the caller sets
    PYDANTIC_DISABLE_PLUGINS (an empty value enables pydantic's plugins: then pydantic's own lookup runs)."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print(gc.isenabled(), 'importlib.metadata' in sys.modules, file=sys.stderr))\n"
        "sys.argv = ['pluginsdk', '--format', 'json', 'templates', 'list']\n"
        "from pluginsdk._entry import main\nmain()\n"
    )
    env = {k: v for k, v in env.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if plugins is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = plugins
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["templates"] == []
    gc_on, scanned = res.stderr.split()[-2:]
    assert gc_on == "False"
    assert scanned == ("False" if plugins is None else "True")


def test_data_option_and_file_input_overlaid_by_arguments(env: dict[str, str], tmp_path: Path) -> None:
    run(env, "templates", "create", "-d", '{"templateId": "web", "imageId": "ami-1", "instanceType": "t3.small"}')
    inp = tmp_path / "req.json"
    inp.write_text(json.dumps({"template_id": "web", "requested_count": 5}))
    dry = run(env, "--dry-run", "machines", "request", "-f", str(inp), "web", "2")  # arguments win over the file
    assert dry["dry_run"] is True and "2 machines" in dry["message"]
    bad = run(env, "templates", "create", "-d", "[1, 2]", ok=False)
    assert bad["error_code"] == "VALIDATION_ERROR" and bad["details"]["field"] == "data"


def test_wait_shows_progress_on_a_terminal_only(env: dict[str, str]) -> None:
    run(env, "templates", "create", "--template-id", "web", "--image-id", "ami-1")
    # stderr on a terminal: progress lines; stdout (a pipe) still carries only the JSON result
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [PLUGINSDK, "--format", "json", "machines", "request", "web", "2", "--wait", "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    out, _ = proc.communicate(timeout=60)
    progress = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        progress += chunk
    os.close(master)
    assert proc.returncode == 0
    result = json.loads(out)
    assert result["status"] == "completed" and len(result["machines"]) == 2
    text = progress.decode()
    assert f"{result['request_id']}: " in text and "0/2 machines running" in text and "2/2 machines running" in text
    # not a terminal: nothing on stderr, same result shape
    res = invoke(env, "machines", "request", "web", "1", "--wait", "--timeout", "60")
    assert res.code == 0 and res.err == "" and res.json()["status"] == "completed"


def test_wait_on_a_terminal_honours_the_timeout(env: dict[str, str]) -> None:
    run(env, "templates", "create", "--template-id", "web", "--image-id", "ami-1")
    slow = Path(env["PLUGIN_CONFIG"])
    slow.write_text(slow.read_text().replace("boot_delay: 1.2", "boot_delay: 60"))
    master, slave = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen(
        [PLUGINSDK, "--format", "json", "machines", "request", "web", "1", "--wait", "--timeout", "2"],
        stdout=subprocess.PIPE, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 5 and time.monotonic() - started < 30  # TIMED_OUT (docs/cli.md)
    result = json.loads(out)
    # --timeout is also the request's own deadline: machines not up by then fail the request
    assert result["status"] in ("failed", "submitted") and result["machines"][0]["status"] != "running"


@pytest.fixture
def server(env: dict[str, str]) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [PLUGINSDK, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_login_stores_a_verified_key_that_the_remote_backend_uses(env: dict[str, str], server: str) -> None:
    expires = (datetime.now(UTC) + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    key = run(env, "api-keys", "create-mine", "cli", "--description", "CLI login", "--expires-at", expires)["api_key"]
    run(env, "templates", "create", "--template-id", "web", "--image-id", "ami-1")

    rejected = run(env, "login", server, stdin="psdk_not-a-real-key\n", ok=False)
    assert rejected["error_code"] == "UNAUTHENTICATED"
    assert not Path(env["PLUGINSDK_TEST_KEYRING"]).exists()

    res = invoke(env, "login", server + "/", stdin=key + "\n")
    assert res.code == 0, res.out + res.err
    stored = res.json()
    assert stored == {"success": True, "url": server, "stored": True, "message": stored["message"]}
    assert key not in res.out + res.err  # never echoed
    assert json.loads(Path(env["PLUGINSDK_TEST_KEYRING"]).read_text()) == {f"pluginsdk|{server}": key}

    remote = {**env, "PLUGIN_API_URL": server}
    assert run(remote, "--backend", "remote", "templates", "list")["templates"][0]["template_id"] == "web"
    assert run(env, "login", server, "--forget")["removed"] is True
    denied = run(remote, "--backend", "remote", "templates", "list", ok=False)
    assert "login" in denied["error"]


def test_login_without_a_keyring_backend_keeps_the_key_in_a_file_only_its_user_reads(
    env: dict[str, str], server: str
) -> None:
    env = {**env, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    expires = (datetime.now(UTC) + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    key = run(env, "api-keys", "create-mine", "cli", "--description", "CLI login", "--expires-at", expires)["api_key"]
    res = invoke(env, "login", server, "--api-key", key)
    assert res.code == 0, res.err
    out = res.json()
    path = Path(env["XDG_CONFIG_HOME"]) / "pluginsdk" / "credentials.json"
    assert out["stored"] is True and str(path) in out["message"] and "readable only by you" in out["message"]
    assert key not in res.out + res.err
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {server: key}
    remote = {**env, "PLUGIN_API_URL": server}
    assert run(remote, "--backend", "remote", "templates", "list")["templates"] == []  # the file's key is used
    forgot = run(env, "login", server, "--forget")
    assert forgot["removed"] is True and forgot["message"] == f"Removed the API key for {server} from {path}."
    assert json.loads(path.read_text()) == {}
    assert run(env, "login", server, "--forget")["message"] == f"Nothing was stored for {server}."


def test_login_where_nothing_can_keep_the_key_says_how_to_pass_it(env: dict[str, str], tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")  # the configuration directory cannot be made under a file
    env = {**env, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "XDG_CONFIG_HOME": str(blocked)}
    res = invoke(env, "login", "http://127.0.0.1:9", "--api-key", "psdk_x", "--no-verify")
    assert res.code == 0, res.err
    out = res.json()
    assert out["stored"] is False and "PLUGIN_API_KEY" in out["message"]
    assert "No usable OS keyring" in res.err and "psdk_x" not in res.out + res.err
