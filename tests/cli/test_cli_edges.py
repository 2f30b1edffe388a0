"""The CLI's edges, as a careful user meets them: malformed files, `--output`, exit codes, usage errors, help,
tables, options, dry runs, `server start`, credentials, prompts.

Each test checks stdout (parsed), stderr and the exit code of the console entry (`tests/support/cli.py`: in this
process, or the installed script as a process where the process itself is under test: Ctrl-C, a terminal, a
server, `PYTHONPATH`); the exit codes are the documented ones (docs/cli.md, `pluginsdk/cli/_exit.py`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import FAST, PLUGINSDK, ROOT, ok, run
from tests.support.cli import invoke as cli

__all__ = ["cli", "managed", "ok", "provider", "template"]


def template(env: dict[str, str], template_id: str = "web") -> None:
    ok(env, "templates", "create", "--template-id", template_id, "--image-id", "ami-1")


def provider(env: dict[str, str], **local: Any) -> None:
    cfg = {"provider": {"local": {"boot_delay": 0.05, "terminate_delay": 0.05, "seed": 1, **local}}}
    Path(env["PLUGIN_CONFIG"]).write_text(yaml.safe_dump(cfg))


# -- YAML and files -------------------------------------------------------------------------------
def test_malformed_yaml_input_file_names_file_line_and_column(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "t.yaml"
    bad.write_text("templateId: web\nimageId: [ami-1\nname: x\n")
    res = cli(env, "templates", "create", "-f", str(bad))
    assert res.code == 1
    out = res.json()
    assert out["error_code"] == "VALIDATION_ERROR" and str(bad) in out["error"]
    assert out["details"]["line"] == 3 and out["details"]["column"] >= 1 and "line 3" in out["error"]


def test_malformed_config_file_is_a_configuration_error(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("provider:\n  type: local\n   region: x\n")
    res = cli(env, "--config", str(bad), "templates", "list")
    assert res.code == 1
    out = res.json()
    assert out["error_code"] == "CONFIGURATION_ERROR" and str(bad) in out["error"] and "line 3, column" in out["error"]


def test_malformed_scheduler_input_is_an_envelope(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "in.yaml"
    bad.write_text("requests: [{requestId: req-1}\n")
    res = cli(env, "--scheduler", "hostfactory", "requests", "status", "-f", str(bad), fmt=None)
    assert res.code == 1
    out = res.json()
    assert out["error_code"] == "VALIDATION_ERROR" and str(bad) in out["message"] and "line" in out["message"]


def test_a_bad_file_in_the_templates_dir_is_skipped_with_a_warning(env: dict[str, str], tmp_path: Path) -> None:
    tdir = tmp_path / "templates"
    tdir.mkdir()
    (tdir / "bad.yaml").write_text("templateId: [broken\n")
    (tdir / "good.yaml").write_text("templateId: good\nimageId: ami-2\n")
    env = {**env, "PLUGIN_TEMPLATES_DIR": str(tdir)}
    res = cli(env, "templates", "list")
    assert res.code == 0, res.err
    assert [t["template_id"] for t in res.json()["templates"]] == ["good"]
    assert "bad.yaml" in res.err and "skipped" in res.err and "line" in res.err
    assert ok(env, "templates", "show", "good")["template"]["image_id"] == "ami-2"


# -- --output -------------------------------------------------------------------------------------
def test_output_is_checked_before_the_operation_runs(env: dict[str, str], tmp_path: Path) -> None:
    res = cli(env, "--output", str(tmp_path / "missing" / "out.json"), "templates", "create",
              "--template-id", "web", "--image-id", "ami-1")  # fmt: skip
    assert res.code == 2
    assert res.json()["details"]["field"] == "--output" and "does not exist" in res.json()["error"]
    assert ok(env, "templates", "list")["templates"] == []  # nothing ran
    res = cli(env, "templates", "list", "--output", str(tmp_path))
    assert res.code == 2 and "directory" in res.json()["error"]


def test_a_failed_write_still_shows_the_result(env: dict[str, str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    template(env)
    res = cli(env, "--output", "/dev/full", "machines", "request", "web", "1")
    assert res.code == 6
    assert res.json()["request_id"].startswith("req-")  # the result (and its id) reached the user
    assert "could not write '/dev/full'" in res.err and "stdout" in res.err


def test_output_file_is_written_whole(env: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    template(env)
    assert cli(env, "--output", str(target), "templates", "list").out == ""
    assert json.loads(target.read_text())["templates"][0]["template_id"] == "web"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.json")] == []


# -- exit codes -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("local", "count", "code", "status"),
    [({"failure_rate": 1.0}, 2, 3, "failed"), ({"capacity": 3}, 6, 4, "partial")],
)
def test_wait_that_does_not_complete_exits_non_zero_with_the_result(
    env: dict[str, str], local: dict[str, Any], count: int, code: int, status: str
) -> None:
    template(env)
    provider(env, **local)
    res = cli(env, "machines", "request", "web", str(count), "--wait", "--timeout", "60")
    assert res.code == code, res.out + res.err
    assert res.json()["status"] == status


def test_wait_that_times_out_exits_5(env: dict[str, str]) -> None:
    template(env)
    provider(env, boot_delay=60)
    res = cli(env, "machines", "request", "web", "1", "--wait", "--timeout", "2")
    assert res.code == 5, res.out + res.err
    assert res.json()["status"] != "completed"


def test_return_of_nothing_and_invalid_template_exit_3(env: dict[str, str], tmp_path: Path) -> None:
    res = cli(env, "machines", "return", "i-unknown")
    assert res.code == 3 and res.json()["skipped_machines"][0]["machine_id"] == "i-unknown"
    cfg = tmp_path / "t.json"
    cfg.write_text('{"template_id": "x"}')
    res = cli(env, "templates", "validate", "-f", str(cfg))
    assert res.code == 3 and res.json()["valid"] is False
    cfg.write_text('{"template_id": "x", "image_id": "ami-1"}')
    assert cli(env, "templates", "validate", "-f", str(cfg)).code == 0


HEARS_CTRL_C = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)
"""Runs a command with SIGINT at its default, as at a terminal: a run started in the background by a shell without
job control (`.ci/run &`) ignores SIGINT, a command inherits that, and Python then keeps ignoring it."""


def test_ctrl_c_during_wait_names_the_request_and_exits_130(env: dict[str, str]) -> None:
    template(env)
    provider(env, boot_delay=120)
    proc = subprocess.Popen(
        [sys.executable, "-c", HEARS_CTRL_C, PLUGINSDK, "--format", "json", "machines", "request", "web", "1",
         "--wait", "--timeout", "300"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not ok(env, "requests", "list")["requests"]:  # submitted
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.3)
        time.sleep(1.0)  # a status reading or two
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    request_id = ok(env, "requests", "list")["requests"][0]["request_id"]
    envelope = json.loads(out)
    assert envelope["error_code"] == "INTERRUPTED" and envelope["details"]["request_id"] == request_id
    assert f"pluginsdk requests status {request_id}" in err and "Traceback" not in err


def test_unhealthy_provider_gives_the_reason_and_exits_3(env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    cfg = {"provider": {"type": "aws", "region": "us-east-1",
                        "aws": {"endpoint_url": f"http://127.0.0.1:{closed}", "max_attempts": 1}}}  # fmt: skip
    Path(env["PLUGIN_CONFIG"]).write_text(yaml.safe_dump(cfg))
    env = {**env, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    res = cli(env, "system", "health")
    assert res.code == 3, res.out + res.err
    out = res.json()
    assert out["healthy"] is False and "unhealthy: " in out["message"] and "connect" in out["details"]["error"]


# -- usage errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("templates", "list", "--no-such-option"), "--no-such-option"),
        (("--format", "json", "templates", "list", "--format", "xml"), "cmd_format"),
        (("machines", "request", "web", "abc"), "requested_count"),
        (("templates", "frobnicate"), None),
        (("templates",), None),  # a bare group: help on stderr, "Missing command" in the envelope
    ],
)
def test_usage_errors_are_envelopes_on_stdout_exit_2(env: dict[str, str], args: tuple[str, ...], field: str) -> None:
    res = cli(env, *args, fmt=None)  # stdout is a pipe: JSON is the default format
    assert res.code == 2, res.out + res.err
    out = res.json()
    assert out["success"] is False and out["error_code"] == "VALIDATION_ERROR" and out["error"]
    assert out["details"].get("field") == field
    assert "Usage:" in res.err


def test_usage_error_in_yaml_and_on_a_terminal_format(env: dict[str, str]) -> None:
    res = cli(env, "templates", "list", "--bogus", fmt="yaml")
    assert res.code == 2 and yaml.safe_load(res.out)["error"] == "No such option '--bogus'."
    res = cli(env, "templates", "list", "--bogus", fmt="table")
    assert res.code == 2 and res.out == "" and "No such option" in res.err


def test_a_negative_count_is_a_number(env: dict[str, str]) -> None:
    template(env)
    res = cli(env, "machines", "request", "web", "-1")
    assert res.code == 1
    out = res.json()
    assert out["details"]["field"] == "requested_count" and out["details"]["value"] == -1
    assert "greater than or equal to 1" in out["error"]
    assert cli(env, "machines", "request", "web", "-1", "--bogus").code == 2  # a misspelt option is still one


# -- help -----------------------------------------------------------------------------------------
def test_help_shows_types_required_and_defaults(env: dict[str, str]) -> None:
    text = " ".join(ok(env, "machines", "request", "--help", fmt=None).split())
    assert "TEMPLATE_ID REQUESTED_COUNT" in text and "[TEMPLATE_ID]" not in text
    assert "--timeout INTEGER" in text and "[default: 3600]" in text and "[required; INTEGER]" in text
    text = " ".join(ok(env, "api-keys", "create-mine", "--help", fmt=None).split())
    assert "--description TEXT" in text and "trimming). [required]" in text
    text = " ".join(ok(env, "requests", "status", "--help", fmt=None).split())
    assert "[default: long]" in text
    text = ok(env, "--help", fmt=None)
    assert "commands." not in text and "Machine templates:" in text


# -- terminal output ------------------------------------------------------------------------------
def test_table_shows_one_objects_fields_and_blank_for_empty(env: dict[str, str]) -> None:
    template(env)
    text = ok(env, "templates", "show", "web", fmt="table")
    rows = dict(line.split(None, 1) if " " in line else (line, "") for line in text.splitlines())
    assert rows["TEMPLATE_ID"] == "web" and rows["IMAGE_ID"] == "ami-1" and rows["NAME"] == ""
    assert "None" not in text
    listing = ok(env, "templates", "list", fmt="table").splitlines()
    assert listing[0].split()[:2] == ["TEMPLATE_ID", "NAME"] and listing[1].split()[0] == "web"
    assert "None" not in "\n".join(listing)


def test_table_of_a_request_keeps_its_id_and_status_above_its_machines(env: dict[str, str]) -> None:
    template(env)
    text = ok(env, "machines", "request", "web", "2", "--wait", "--timeout", "60", fmt="table")
    head, machines = text.split("\n\nMACHINES:\n")
    fields = dict(line.split(None, 1) for line in head.splitlines() if " " in line)
    assert fields["REQUEST_ID"].startswith("req-") and fields["STATUS"] == "completed"
    rows = machines.splitlines()
    assert rows[0].split()[:2] == ["MACHINE_ID", "REQUEST_ID"] and len(rows) == 3
    assert all(r.split()[1] == fields["REQUEST_ID"] for r in rows[1:])


def test_list_format_is_records_with_nested_values_as_json(env: dict[str, str]) -> None:
    template(env, "a")
    ok(env, "templates", "create", "--template-id", "b", "--image-id", "ami-2", "--tags", "team=x")
    text = ok(env, "templates", "list", fmt="list")
    records = text.strip().split("\n\n")
    assert len(records) == 2
    fields = [dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in r.splitlines())
              for r in records]  # fmt: skip
    assert [f["template_id"] for f in fields] == ["a", "b"]
    assert json.loads(fields[1]["tags"]) == {"team": "x"} and fields[0]["name"] == ""


# -- options as people write them -----------------------------------------------------------------
def test_tags_key_value_pairs(env: dict[str, str]) -> None:
    template(env)
    req = ok(env, "machines", "request", "web", "1", "--tags", "a=1,b=2", "--tags", "c=3")
    shown = ok(env, "requests", "show", req["request_id"])
    assert shown["tags"] == {"a": "1", "b": "2", "c": "3"}
    res = cli(env, "machines", "request", "web", "1", "--tags", "notakv")
    assert res.code == 2 and res.json()["details"]["field"] == "--tags" and "notakv" in res.json()["error"]
    assert len(ok(env, "requests", "list")["requests"]) == 1  # the refused one did not run


def test_template_ids_outside_the_documented_set_are_refused(env: dict[str, str]) -> None:
    for bad in ("bad id", "-web", "web\u200b"):
        res = cli(env, "templates", "create", "--template-id", bad, "--image-id", "ami-1")
        assert res.code == 1 and res.json()["details"]["field"] == "template_id", bad
    template(env, "web-1.a_b")


# -- dry run --------------------------------------------------------------------------------------
def test_dry_run_records_nothing_and_returns_no_request_id(env: dict[str, str]) -> None:
    template(env)
    dry = ok(env, "--dry-run", "machines", "request", "web", "2")
    assert dry["dry_run"] is True and dry.get("request_id") is None and "nothing was recorded" in dry["message"]
    assert ok(env, "requests", "list")["requests"] == []
    refused = cli(env, "--dry-run", "templates", "delete", "web")
    assert refused.code == 2 and "no dry run" in refused.json()["error"]
    assert ok(env, "templates", "show", "web")["template"]["template_id"] == "web"  # not deleted


# -- server start, system health / config ---------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_start(env: dict[str, str], *options: str) -> tuple[subprocess.Popen[str], int]:
    """`pluginsdk server start` on a free port, returned once `/health` answers (stopped if it never does)."""
    port = _free_port()
    proc = subprocess.Popen([PLUGINSDK, "server", "start", *options, "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                _stderr(proc)
                raise AssertionError("the server did not start") from None
            time.sleep(0.2)


@pytest.fixture
def serving(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], int]]:
    proc, port = _server_start(env, "--host", "127.0.0.1")
    try:
        yield proc, port
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def _stderr(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    assert proc.stderr is not None
    return proc.stderr.read()


def test_server_start_says_where_and_how_to_mint_the_first_key(
    env: dict[str, str], serving: tuple[subprocess.Popen[str], int]
) -> None:
    proc, port = serving
    config = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/amplify-config", timeout=5))
    assert config["api"] == f"http://127.0.0.1:{port}/"  # app.apiUrl follows --port
    err = _stderr(proc)
    assert f"listening on http://127.0.0.1:{port}" in err and f"http://127.0.0.1:{port}/docs" in err
    assert f"MCP tools for remote assistants at http://127.0.0.1:{port}/mcp." in err
    line = next(x.strip() for x in err.splitlines() if "api-keys create" in x)
    key = ok(env, *line.split()[1:5], "--description", "first administrator key")["api_key"]  # the hint works
    assert key.startswith("psdk_")


def test_server_start_on_a_store_with_keys_gives_no_hint(env: dict[str, str]) -> None:
    ok(env, "api-keys", "create", "k", "administrator", "--description", "existing key")
    proc, _port = _server_start(env)
    err = _stderr(proc)
    assert "listening on" in err and "api-keys create" not in err


def test_server_start_bad_port_port_in_use_and_missing_extra(env: dict[str, str], tmp_path: Path) -> None:
    res = run(env, "server", "start", "--port", "70000")
    assert res.code == 2 and res.json()["details"]["field"] == "port"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = run(env, "server", "start", "--port", str(port))
    assert res.code == 1 and f"Cannot listen on 127.0.0.1:{port}" in res.json()["error"]
    fake = tmp_path / "no_server_extra" / "uvicorn"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'uvicorn'\", name='uvicorn')\n")
    res = run({**env, "PYTHONPATH": f"{fake.parent}{os.pathsep}{ROOT}"}, "server", "start", "--port", "0")
    assert res.code == 1 and "pluginsdk[server]" in res.json()["error"]


def test_system_config_shows_the_effective_store_path(env: dict[str, str]) -> None:
    env = {k: v for k, v in env.items() if k != "PLUGIN_STORAGE_PATH"}
    out = ok(env, "system", "config")
    expected = str(Path(env["XDG_DATA_HOME"]) / "pluginsdk" / "pluginsdk.db")
    assert out["configuration"]["storage"]["path"] == expected
    assert Path(expected).exists()


# -- credentials ---------------------------------------------------------------------------------
def test_login_with_the_null_keyring_keeps_the_key_in_the_file(env: dict[str, str]) -> None:
    """The null keyring accepts a key and keeps nothing: the key goes to the file only its user reads."""
    env = {**env, "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    res = cli(env, "login", "http://127.0.0.1:9", "--api-key", "psdk_x", "--no-verify")
    assert res.code == 0
    out = res.json()
    path = Path(env["XDG_CONFIG_HOME"]) / "pluginsdk" / "credentials.json"
    assert out["stored"] is True and str(path) in out["message"] and "psdk_x" not in res.out + res.err
    assert json.loads(path.read_text()) == {"http://127.0.0.1:9": "psdk_x"}


def managed(env: dict[str, str]) -> dict[str, str]:
    """`env` with the managed user pool on (cheap password hashing), its configuration rewritten."""
    cfg = yaml.safe_load(FAST)
    hashing = {"timeCost": 1, "memoryKib": 8, "parallelism": 1}
    cfg["app"] = {"authProvider": {"useManaged": {"enabled": True, "passwordHashing": hashing}}}
    Path(env["PLUGIN_CONFIG"]).write_text(yaml.safe_dump(cfg))
    return env


# -- auth login prompts; onboarding without SMTP ---------------------------------------------
def test_onboarding_without_smtp_and_auth_login_reading_the_password(env: dict[str, str]) -> None:
    env = managed(env)
    created = ok(env, "users", "create", "eve", "eve@example.com")
    temp = created["temporary_password"]
    assert temp and "shown this once" in created["message"]
    assert temp not in json.dumps(ok(env, "users", "list"))
    res = cli(env, "auth", "login", "eve", stdin=temp + "\n")  # no --password: read from stdin
    assert res.code == 0, res.out + res.err
    assert res.json()["challenge_name"] == "NEW_PASSWORD_REQUIRED" and temp not in res.out + res.err
    wrong = cli(env, "auth", "login", "eve", stdin="not-the-password\n")
    assert wrong.code == 1 and wrong.json()["error_code"] == "UNAUTHENTICATED"


# -- words -----------------------------------------------------------------------------------------
def test_counted_nouns(env: dict[str, str]) -> None:
    template(env)
    assert ok(env, "templates", "list")["message"] == "1 template"
    template(env, "db")
    assert ok(env, "templates", "list")["message"] == "2 templates"


def test_rest_errors_name_no_cli_command_and_the_cli_adds_the_hint(
    env: dict[str, str], serving: tuple[subprocess.Popen[str], int]
) -> None:
    _, port = serving
    key = ok(env, "api-keys", "create", "k", "administrator", "--description", "rest errors")["api_key"]
    for path in ("/api/v1/templates/nope", "/api/v1/requests/req-nope", "/api/v1/machines/i-nope"):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": key})
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(req, timeout=10)
        body = json.loads(caught.value.read())
        assert caught.value.code == 404 and "not found" in body["error"] and "pluginsdk" not in body["error"]
    res = cli(env, "templates", "show", "nope")
    assert res.code == 1 and "pluginsdk templates list" in res.err


def test_a_user_with_no_roles_is_told_so(env: dict[str, str]) -> None:
    res = cli({**env, "PLUGIN_USER": "nobody"}, "templates", "list")
    assert res.code == 1
    out = res.json()
    assert out["error_code"] == "FORBIDDEN" and "holds no role" in out["error"]


def test_auth_login_asks_for_the_password_and_the_new_one_without_echo_on_a_terminal(env: dict[str, str]) -> None:
    import fcntl
    import pty
    import termios

    env = managed(env)
    temp = ok(env, "users", "create", "ann", "ann@example.com")["temporary_password"]
    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # the pty is the child's /dev/tty, where getpass reads and prompts
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [PLUGINSDK, "--format", "json", "auth", "login", "ann"], stdin=slave, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env, text=True,
        preexec_fn=controlling_terminal,  # noqa: PLW1509 - two syscalls, no locks taken; no other way to TIOCSCTTY
    )  # fmt: skip
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    new = "Fresh-Passw0rd-42"
    for prompt, answer in (("Password", temp), ("New password", new), ("Repeat for confirmation", new)):
        while prompt.encode() not in seen:
            assert time.monotonic() < deadline and proc.poll() is None, seen
            seen += os.read(master, 1024)
        seen = seen.replace(prompt.encode(), b"", 1)
        os.write(master, answer.encode() + b"\n")
    out, err = proc.communicate(timeout=60)
    try:
        while chunk := os.read(master, 1024):
            seen += chunk
    except OSError:
        pass
    os.close(master)
    assert proc.returncode == 0, out + err
    signed_in = json.loads(out)  # the temporary password's challenge answered at the prompt
    assert signed_in.get("challenge_name") is None and signed_in["access_token"], signed_in
    for secret in (temp, new):
        assert secret.encode() not in seen and secret not in out + err  # never echoed


def test_list_options_take_json_items_whole(env: dict[str, str]) -> None:
    """A list of objects is given as repeated JSON objects or one JSON array (commas inside JSON never split an
    item); a plain list still splits on commas; JSON that does not parse is a usage error naming the option."""
    admin = '{"roles": ["admin"], "objectType": "asset", "attributes": {"databaseId": "d"}}'
    nobody = '{"userId": "nobody", "objectType": "asset"}'
    repeated = ok(env, "auth", "check-batch", "--questions", admin, "--questions", nobody, "--allowed-only")
    array = ok(env, "auth", "check-batch", "--questions", f"[{admin}, {nobody}]", "--allowed-only")
    assert repeated["allowed"] == array["allowed"] == [True, False] and array["decisions"] == []
    broken = cli(env, "auth", "check-batch", "--questions", '{"roles": ["admin"],')
    assert broken.code == 2 and "--questions" in broken.err and "not valid JSON" in broken.err
    listed = ok(env, "auth", "check-batch", "--questions", admin, "--allowed-only", "--questions", nobody)
    assert listed["allowed"] == [True, False]
    roles = ok(
        env, "auth", "check", "asset", "GET", "--roles", "admin,reader", "--roles", "x", "--attributes", "databaseId=d"
    )
    assert roles["roles"] == ["admin"]  # three names split on commas; only the existing one counts
