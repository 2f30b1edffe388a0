"""Property-based API test: schemathesis (v4 CLI, every phase and check) against a real server.

Run twice, each on a fresh store: with an administrator's API key and with a read-only user's key. Phases:
examples, coverage (boundary values, negative data, methods the document does not list), fuzzing, and
stateful (the document's links from each POST to the operations on what it created: create -> read ->
update -> delete). Checks: all of them (no 5xx, responses conform to the document in status, headers,
content type and body, schema-violating input rejected, unsupported methods 405 with `Allow`, OPTIONS'
`Allow` matches the document, auth not ignored, no use after delete, ...) except `positive_data_acceptance`:
schema-valid input the server rightly refuses is not a defect — cross-field rules JSON schema cannot state
(machine ids unless `return_all`), features off in this configuration (password sign-in without the
managed pool), a request target over the 8 KiB limit from an unbounded query list, a read-only caller's 403.

`MAX_EXAMPLES` bounds the time (about a minute per run on a quiet box). The server runs with the HTTP
protocol `serve()` uses.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

from pluginsdk.config import load_settings
from tests.server.door import reader_key, threaded_server
from tests.support.backends import base_config
from tests.support.remote import admin_key

MAX_EXAMPLES = 5
SEED = 20261123


def _schemathesis(tmp_path: Path, who: str) -> None:
    from pluginsdk.server import create_app, http_protocol

    config = base_config(tmp_path / who)
    key = asyncio.run(admin_key(config) if who == "admin" else reader_key(config))
    cli = Path(sys.executable).parent / "schemathesis"
    report = tmp_path / f"{who}.xml"
    with threaded_server(create_app(load_settings(config=config, environ={})), http_protocol()) as port:
        command = [
            str(cli), "--config-file", str(Path(__file__).with_name("schemathesis.toml")), "run", f"http://127.0.0.1:{port}/openapi.json",
            "--checks", "all", "--exclude-checks", "positive_data_acceptance",
            "--mode", "all", "--phases", "examples,coverage,fuzzing,stateful",
            "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--workers", "1",
            "--suppress-health-check", "all", "--request-timeout", "30",
            "--header", f"Authorization: {key}",
            "--report", "junit", "--report-junit-path", str(report), "--no-color",
        ]  # fmt: skip
        env = {**os.environ, "SCHEMATHESIS_HOOKS": "", "NO_COLOR": "1"}
        run = subprocess.run(  # in tmp_path: its cache (.schemathesis/) stays out of the repository
            command, capture_output=True, text=True, timeout=600, env=env, check=False, cwd=tmp_path
        )
    output = run.stdout + run.stderr
    if os.environ.get("PLUGINSDK_SCHEMATHESIS_LOG"):  # the whole report, for a human reading a failure
        Path(os.environ["PLUGINSDK_SCHEMATHESIS_LOG"] + f".{who}").write_text(output)
    total = re.search(r"Selected: \d+/(\d+)", output)
    assert total and f"Tested: {total.group(1)}" in output, output[-3000:]  # every operation ran (96 today)
    assert run.returncode == 0, f"schemathesis as {who}:\n{output[-12000:]}"


def test_admin_key_every_phase_every_check(tmp_path: Path) -> None:
    _schemathesis(tmp_path, "admin")


def test_read_only_key_every_phase_every_check(tmp_path: Path) -> None:
    _schemathesis(tmp_path, "reader")
