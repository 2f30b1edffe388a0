"""The CLI through its entry point (in this process): JSON parsed, exit codes checked; `--help` of every command;
`server start` as a process, stopped by a signal."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from pluginsdk.cli import cli
from pluginsdk.operations import CATALOG
from tests.support.cli import invoke


def run(env: dict[str, str], *args: str, ok: bool = True) -> Any:
    res = invoke(env, *args, "--format", "json", fmt=None)
    assert (res.code == 0) == ok, res.out + res.err
    return res.json()


def test_help_of_every_command() -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["--help"]).exit_code == 0
    for spec in CATALOG.values():
        assert spec.cli is not None
        res = runner.invoke(cli, [spec.cli.group, spec.cli.action, "--help"])
        assert res.exit_code == 0, (spec.name, res.output)
        assert spec.summary.split("(")[0][:30] in " ".join(res.output.split())


def test_request_status_return_cycle(env: dict[str, str]) -> None:
    assert run(env, "templates", "create", "--template-id", "web", "--image-id", "ami-1")["template_id"] == "web"
    listed = run(env, "templates", "list")
    assert listed["total_count"] == 1 and listed["templates"][0]["template_id"] == "web"
    req = run(env, "machines", "request", "web", "2", "--wait", "--timeout", "60")
    assert req["status"] == "completed" and len(req["machines"]) == 2
    status = run(env, "requests", "status", req["request_id"])
    assert status["requests"][0]["status"] == "completed"
    ids = [m["machine_id"] for m in req["machines"]]
    ret = run(env, "machines", "return", *ids)
    assert ret["processed_machines"] == ids and ret["request_id"].startswith("ret-")
    shown = run(env, "machines", "status", *ids)
    assert {m["machine_id"] for m in shown["machines"]} == set(ids)


def test_errors_exit_non_zero_with_the_envelope(env: dict[str, str]) -> None:
    env_ = run(env, "templates", "show", "nope", ok=False)
    assert env_["success"] is False and env_["error_code"] == "TEMPLATE_NOT_FOUND"
    bad = run(env, "machines", "request", "web", "0", ok=False)
    assert bad["error_code"] == "VALIDATION_ERROR" and bad["details"]["field"] == "requested_count"


def test_file_input_and_dry_run(env: dict[str, str], tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text("templateId: from-file\nimageId: ami-9\ninstanceType: t3.large\n")
    assert run(env, "templates", "create", "--file", str(f))["template_id"] == "from-file"
    dry = invoke(env, "--dry-run", "--format", "json", "machines", "request", "from-file", "1", fmt=None)
    assert dry.code == 0 and json.loads(dry.out)["dry_run"] is True
    assert run(env, "requests", "list")["total_count"] == 0


def test_server_start_serves_and_stops_on_sigterm(env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pluginsdk", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                body = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2))
                break
            except OSError:
                assert time.monotonic() < deadline, (
                    proc.stderr.read().decode() if proc.poll() is not None else "timeout"
                )
                time.sleep(0.2)
        assert body["status"] == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    # uvicorn finishes in-flight requests, closes the app (store), then re-raises the signal it caught
    assert code in (0, -signal.SIGTERM)
    assert b"Traceback" not in proc.stderr.read()
