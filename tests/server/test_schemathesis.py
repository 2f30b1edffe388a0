"""Property-based API test: schemathesis (v4 CLI, every phase and check) against a real server.

Run twice, each on a fresh store: with an administrator's API key and with a read-only user's key. Phases:
examples, coverage (boundary values, negative data, methods the document does not list), fuzzing, and
stateful (the document's links from each create to the operations on what it created: create -> read ->
update -> delete). Checks: all of them (no 5xx, responses conform to the document in status, headers,
content type and body, schema-violating input rejected, unsupported methods 405 with `Allow`, OPTIONS'
`Allow` matches the document, auth not ignored, no use after delete, ...) except `positive_data_acceptance`:
schema-valid input the server rightly refuses is not a defect — cross-field rules JSON schema cannot state
(machine ids unless `return_all`), features off in this configuration (password sign-in without the
managed pool), a request target over the 8 KiB limit from an unbounded query list, a read-only caller's 403.

The stateful phase is read back from schemathesis' NDJSON report: the administrator's run must have walked
the CRUD chains of `WALKED` (a link followed from a 2xx create to a 2xx answer), the reader's must have had
every create it tried refused with 403. `tests/server/schemathesis.toml` sizes the phase and turns off link
inference (the document's links are what is tested); `schemathesis_hooks.py` says why stateful creates get
fresh keys and why the run never revokes its own key. `MAX_EXAMPLES` bounds the other phases. Cost on a
loaded 2-core box: about 85 s for the administrator's run (stateful phase ~11 s), 35 s for the reader's.
The server runs with the HTTP protocol `serve()` uses.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pluginsdk import PluginSDK
from pluginsdk.config import load_settings
from tests.server.door import reader_key, threaded_server
from tests.support.backends import base_config
from tests.support.remote import admin_key

MAX_EXAMPLES = 5
SEED = 20261123
ROOT = Path(__file__).parents[2]
HOOKS = "tests.server.schemathesis_hooks"

WALKED = {
    "POST /api/v1/templates": {"get_template", "update_template", "delete_template"},
    "POST /roles": {"update_role", "delete_role"},  # no single-role read: the listing is the read
}
"""Create -> links (named for their target operation) the administrator's stateful phase must walk."""


def _schemathesis(tmp_path: Path, who: str) -> tuple[str, Path]:
    from pluginsdk.server import create_app, http_protocol

    config = base_config(tmp_path / who)
    key = asyncio.run(admin_key(config) if who == "admin" else reader_key(config))
    own = asyncio.run(_key_ids(config))
    cli = Path(sys.executable).parent / "schemathesis"
    report = tmp_path / f"{who}.ndjson"
    with threaded_server(create_app(load_settings(config=config, environ={})), http_protocol()) as port:
        command = [
            str(cli), "--config-file", str(Path(__file__).with_name("schemathesis.toml")), "run", f"http://127.0.0.1:{port}/openapi.json",
            "--checks", "all", "--exclude-checks", "positive_data_acceptance",
            "--mode", "all", "--phases", "examples,coverage,fuzzing,stateful",
            "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--workers", "1",
            "--suppress-health-check", "all", "--request-timeout", "30",
            "--header", f"Authorization: {key}",
            "--report", "ndjson", "--report-ndjson-path", str(report), "--no-color",
        ]  # fmt: skip
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "SCHEMATHESIS_HOOKS": HOOKS, "PLUGINSDK_SCHEMATHESIS_KEYS": own, "PYTHONPATH": path}
        env["NO_COLOR"] = "1"
        run = subprocess.run(  # in tmp_path: its cache (.schemathesis/) stays out of the repository
            command, capture_output=True, text=True, timeout=900, env=env, check=False, cwd=tmp_path
        )
    output = run.stdout + run.stderr
    if os.environ.get("PLUGINSDK_SCHEMATHESIS_LOG"):  # the whole report, for a human reading a failure
        Path(os.environ["PLUGINSDK_SCHEMATHESIS_LOG"] + f".{who}").write_text(output)
    total = re.search(r"Selected: \d+/(\d+)", output)
    assert total and f"Tested: {total.group(1)}" in output, output[-3000:]  # every operation ran (96 today)
    assert run.returncode == 0, f"schemathesis as {who}:\n{output[-12000:]}"
    links = re.search(r"API Links: +(\d+) covered / (\d+) selected / (\d+) total", output)
    assert links and links.group(2) == links.group(3), output[-3000:]  # every link of the document is valid
    return output, report


async def _key_ids(config: dict[str, Any]) -> str:
    """The ids of the keys in the store before the run (the hooks keep the run from revoking its own)."""
    async with PluginSDK(config=config) as local:
        return ",".join(item.api_key_id for item in (await local.list_api_keys()).items)


def _stateful_steps(report: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any], int | None]]:
    """(case, its recorded entry, response status) of every step of the stateful phase."""
    for line in report.read_text().splitlines():
        finished = json.loads(line).get("ScenarioFinished")
        if not finished or finished.get("phase") != "stateful":
            continue
        recorder = finished["recorder"]
        for case_id, entry in recorder.get("cases", {}).items():
            response = (recorder.get("interactions", {}).get(case_id) or {}).get("response") or {}
            yield entry, recorder, response.get("status_code")


def _walked(report: Path) -> dict[str, set[str]]:
    """Create -> links followed from one of its 2xx answers to a 2xx answer of the link's target."""
    walked: dict[str, set[str]] = {}
    for entry, recorder, status in _stateful_steps(report):
        transition = entry.get("transition")
        if not transition or not entry.get("is_transition_applied") or not _ok(status):
            continue
        parent = (recorder["interactions"].get(transition["parent_id"]) or {}).get("response") or {}
        if _ok(parent.get("status_code")):
            source, link, _target = transition["id"].split(" -> ")  # "POST /roles -> [200] delete_role -> DELETE ..."
            walked.setdefault(source, set()).add(link.split("] ", 1)[1])
    return walked


def _ok(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


def test_admin_key_every_phase_every_check(tmp_path: Path) -> None:
    output, report = _schemathesis(tmp_path, "admin")
    walked = _walked(report)
    missing = {create: links - walked.get(create, set()) for create, links in WALKED.items()}
    assert not any(missing.values()), f"CRUD links never walked: {missing}; walked: {walked}\n{output[-3000:]}"


def test_read_only_key_every_phase_every_check(tmp_path: Path) -> None:
    _output, report = _schemathesis(tmp_path, "reader")
    creates: dict[str, set[int | None]] = {}
    for entry, _recorder, status in _stateful_steps(report):
        case = entry["value"]
        label = f"{case['method']} {case['path']}"
        if label in WALKED and status != 401:  # 401: the check that the route refuses a missing key
            creates.setdefault(label, set()).add(status)
    assert creates == {label: {403} for label in WALKED}, creates  # tried, and refused before validation
