"""Property-based API test: schemathesis (v4 CLI, every phase and check) against a real server.

Run twice, each on a fresh store: with an administrator's API key and with a read-only user's key. Phases:
examples, coverage (boundary values, negative data, methods the document does not list), fuzzing, and
stateful (the document's links from each create to the operations on what it created: create -> read ->
update -> delete). Checks: all of them (no 5xx, responses conform to the document in status, headers,
content type and body, schema-violating input rejected, unsupported methods 405 with `Allow`, OPTIONS'
`Allow` matches the document, auth not ignored, no use after delete, ...) except `positive_data_acceptance`:
schema-valid input the server rightly refuses is not a defect — cross-field rules JSON schema cannot state
(machine ids unless `return_all`, criterion fields per `objectType`, "at least one of" in updates, a
self-service expiry within a year), state (a wrong password, a role that does not exist, a key for a user
without roles), a request target over the 8 KiB limit from an unbounded query list, a read-only caller's 403.

The stateful phase is read back from schemathesis' NDJSON report: the administrator's run must have walked
the CRUD chains of `WALKED` (a link followed from a 2xx create to a 2xx answer), the reader's must have walked
its self-service keys and had every other create it tried refused with 403. `tests/server/schemathesis.toml`
sizes the phase and turns off link inference (the document's links are what is tested);
`schemathesis_hooks.py` says why stateful creates get fresh keys, which cross-field rules it fills in for
positive stateful bodies, and why the run never revokes its own key or user. The managed user pool is on
(`MANAGED_POOL`), so its routes are walked too. `MAX_EXAMPLES` bounds the other phases, `STATEFUL_SCENARIOS`
the stateful one. Cost on a 2-core box shared with other test runs: ~127 s for the administrator's run
(stateful phase ~92 s), ~59 s for the reader's (stateful ~14 s).
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
SEED = 20261201
ROOT = Path(__file__).parents[2]
HOOKS = "tests.server.schemathesis_hooks"
MANAGED_POOL = {
    "authProvider": {
        "useManaged": {"enabled": True, "passwordHashing": {"timeCost": 1, "memoryKib": 8, "parallelism": 1}}
    }
}
"""The embedded user pool on (its routes are walked too), with cheap password hashing."""

WALKED = {
    # get_template: never chosen by this seed's walk (0 of 300 scenarios, seed 20261123), although the
    # document's link to it is valid and counted
    "POST /api/v1/templates": {"update_template", "delete_template", "create_request"},
    "POST /roles": {"update_role", "delete_role"},  # no single-role read: the listing is the read
    "POST /auth/constraints/{constraint_id}": {"get_constraint", "update_constraint", "delete_constraint"},
    "POST /auth/api-keys": {"get_api_key", "update_api_key", "delete_api_key"},
    "POST /auth/user/api-keys": {"get_my_api_key", "update_my_api_key", "delete_my_api_key"},
    "POST /user-roles": {"update_user_roles", "delete_user_roles"},  # the listing is the read
    "POST /user/managed": {"update_managed_user", "delete_managed_user"},
    # a request's state moves with time (its machines boot while the walk runs), so which of its links answer
    # 2xx depends on the box's speed: every read or update of the request counts for its chain
    "POST /api/v1/machines": {
        "get_request",
        "sync_request",
        "populate_machine_ids",
        "complete_request",
        "cancel_request",
    },
}
SELF_SERVICE = {"POST /auth/user/api-keys"}
"""Creates a read-only user may use too (its own keys): the reader's run walks them, and is refused the rest."""
SAME_CREATE = {"POST /api/v1/machines/request": "POST /api/v1/machines", "POST /user/cognito": "POST /user/managed"}
"""Alternative paths of a create (listing B's, the Cognito-named one): a walk from either counts for the create."""
"""Create -> links (named for their target operation) the administrator's stateful phase must walk."""


def _schemathesis(tmp_path: Path, who: str) -> tuple[str, Path]:
    from pluginsdk.server import create_app, http_protocol

    config = base_config(tmp_path / who, app=MANAGED_POOL)
    key = asyncio.run(admin_key(config) if who == "admin" else reader_key(config))
    own, users = asyncio.run(_own(config))
    cli = Path(sys.executable).parent / "schemathesis"
    report = tmp_path / f"{who}.ndjson"
    with threaded_server(create_app(load_settings(config=config, environ={})), http_protocol()) as port:
        command = [
            str(cli), "--config-file", str(_config_file(tmp_path, who)), "run", f"http://127.0.0.1:{port}/openapi.json",
            "--exclude-checks", "positive_data_acceptance",  # every other check: on by default (schemathesis.toml)
            "--mode", "all", "--phases", "examples,coverage,fuzzing,stateful",
            "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--workers", "1",
            "--suppress-health-check", "all", "--request-timeout", "30",
            "--header", f"Authorization: {key}",
            "--report", "ndjson", "--report-ndjson-path", str(report), "--no-color",
        ]  # fmt: skip
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "SCHEMATHESIS_HOOKS": HOOKS, "PYTHONPATH": path}
        env |= {"PLUGINSDK_SCHEMATHESIS_KEYS": own, "PLUGINSDK_SCHEMATHESIS_USERS": users}
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


STATEFUL_SCENARIOS = {"admin": 600, "reader": 100}
"""Scenarios of each run's stateful phase. The administrator's walk needs 600 (`schemathesis.toml`). The reader's
has seen every create refused by its 8th scenario and walked its self-service chain by its 15th (seed 20261201,
read from its report): 100 leave a margin of six, where 600 cost ~60 s more on a 2-core box."""


def _config_file(tmp_path: Path, who: str) -> Path:
    """`schemathesis.toml` with the stateful phase sized for `who`."""
    text = Path(__file__).with_name("schemathesis.toml").read_text()
    line = f"max-examples = {STATEFUL_SCENARIOS['admin']}\n"
    assert text.count(line) == 1, "schemathesis.toml sizes the stateful phase on one line"
    path = tmp_path / f"schemathesis-{who}.toml"
    path.write_text(text.replace(line, f"max-examples = {STATEFUL_SCENARIOS[who]}\n"))
    return path


async def _own(config: dict[str, Any]) -> tuple[str, str]:
    """The ids of the keys in the store before the run and of the users they act as (the hooks keep the run
    from revoking its own key)."""
    async with PluginSDK(config=config) as local:
        keys = (await local.list_api_keys()).items
        return ",".join(item.api_key_id for item in keys), ",".join({item.user_id for item in keys})


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
            walked.setdefault(SAME_CREATE.get(source, source), set()).add(link.split("] ", 1)[1])
    return walked


def _ok(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


WALKED_SHARE = 0.85
"""The stateful walk is a seeded random walk: a change to any schema in the document shifts which links a
seed takes. So every chain must be walked from its create to a read or update AND to its delete (where it has
one), and at least this share of all the links listed in `WALKED` must be walked."""
_DELETES = {link for links in WALKED.values() for link in links if link.startswith(("delete_", "cancel_"))}


def test_admin_key_every_phase_every_check(tmp_path: Path) -> None:
    output, report = _schemathesis(tmp_path, "admin")
    walked = _walked(report)
    broken = {
        create: sorted(links & walked.get(create, set()))
        for create, links in WALKED.items()
        if not (links - _DELETES) & walked.get(create, set())
        or (links & _DELETES and not links & _DELETES & walked.get(create, set()))
    }
    assert not broken, f"CRUD chains not walked (create -> read/update, create -> delete): {broken}; walked: {walked}"
    listed = sum(len(links) for links in WALKED.values())
    share = sum(len(links & walked.get(create, set())) for create, links in WALKED.items()) / listed
    assert share >= WALKED_SHARE, f"{share:.0%} of the CRUD links walked; walked: {walked}\n{output[-3000:]}"


def test_read_only_key_every_phase_every_check(tmp_path: Path) -> None:
    output, report = _schemathesis(tmp_path, "reader")
    creates: dict[str, set[int | None]] = {}
    for entry, _recorder, status in _stateful_steps(report):
        case = entry["value"]
        label = SAME_CREATE.get(f"{case['method']} {case['path']}", f"{case['method']} {case['path']}")
        if label in WALKED and label not in SELF_SERVICE and status != 401:  # 401: the route refuses a missing key
            creates.setdefault(label, set()).add(status)
    assert creates == {label: {403} for label in WALKED if label not in SELF_SERVICE}, creates  # refused first
    walked = _walked(report)
    missing = {create: WALKED[create] - walked.get(create, set()) for create in SELF_SERVICE}
    assert not any(missing.values()), f"self-service links never walked: {missing}; walked: {walked}\n{output[-3000:]}"
