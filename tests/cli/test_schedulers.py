"""HostFactory and LSF: the shipped scripts run as the scheduler runs them, against a real SQLite store.

Each script is a subprocess given `-f FILE`; stdout is parsed as JSON and the exit code checked, through
the whole cycle getAvailableTemplates -> requestMachines -> getRequestStatus -> requestReturnMachines ->
getRequestStatus (return) -> getReturnRequests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pluginsdk.files import MAX_DEPTH, TOO_DEEP
from tests.support.cli import PLUGINSDK, ROOT, cli_environment, invoke

SCRIPTS = ROOT / "scripts"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = (
        "provider:\n  local:\n    boot_delay: 0.2\n    terminate_delay: 0.1\n    seed: 3\n"
        "scheduler:\n  grace_period: 120\n"
    )
    return cli_environment(tmp_path, config, PLUGIN_TEMPLATES_DIR=str(tmp_path / "templates"), PLUGINSDK_BIN=PLUGINSDK)


def script(env: dict[str, str], tmp_path: Path, scheduler: str, name: str, payload: Any, ok: bool = True) -> Any:
    """Run one shipped script the way the scheduler does: input in a file, `-f FILE`."""
    infile = tmp_path / f"{name}.json"
    infile.write_text(json.dumps(payload))
    res = subprocess.run(
        ["/bin/sh", str(SCRIPTS / scheduler / f"{name}.sh"), "-f", str(infile)],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == (0 if ok else 1), res.stdout + res.stderr
    return json.loads(res.stdout)


def poll_status(env: dict[str, str], tmp_path: Path, scheduler: str, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        out = script(env, tmp_path, scheduler, "getRequestStatus", {"requests": [{"requestId": request_id}]})
        (entry,) = out["requests"]
        if entry["status"] != "running" or time.monotonic() > deadline:
            return dict(entry)
        time.sleep(0.2)


@pytest.mark.parametrize(("scheduler", "template_id", "memory_key"), [
    ("hostfactory", "hf-general-4", "nram"),
    ("lsf", "lsf-general-4", "mem"),
])  # fmt: skip
def test_script_round_trip(
    env: dict[str, str], tmp_path: Path, scheduler: str, template_id: str, memory_key: str
) -> None:
    (tmp_path / "templates").mkdir()
    shutil.copy(SCRIPTS / scheduler / "pluginsdk_templates.json", tmp_path / "templates")
    sample = json.loads((SCRIPTS / scheduler / "pluginsdk_templates.json").read_text())["templates"]

    listed = script(env, tmp_path, scheduler, "getAvailableTemplates", {})
    by_id = {t["templateId"]: t for t in listed["templates"]}
    assert set(by_id) == {t["templateId"] for t in sample}
    for t in sample:  # the attributes the sample file documents are the ones derived from vmType
        assert by_id[t["templateId"]]["attributes"] == t["attributes"]
        assert by_id[t["templateId"]]["instanceTags"] == t["instanceTags"]
    tpl = by_id[template_id]
    assert tpl["maxNumber"] == 20 and tpl["attributes"][memory_key] == ["Numeric", "16384"]

    payload: dict[str, Any] = {"template": {"templateId": template_id, "machineCount": 2}}
    if scheduler == "lsf":
        payload |= {"rc_account": "proj-7", "userData": "x"}
    created = script(env, tmp_path, scheduler, "requestMachines", payload)
    assert created["requestId"].startswith("req-") and created["message"]

    status = poll_status(env, tmp_path, scheduler, created["requestId"])
    assert status["status"] == "complete", status
    machines = status["machines"]
    assert len(machines) == 2 and {m["result"] for m in machines} == {"succeed"}
    for m in machines:
        assert m["machineId"] and m["name"] and m["privateIpAddress"] and isinstance(m["launchtime"], int)
        if scheduler == "lsf":
            assert m["rcAccount"] == "proj-7"
        else:
            assert "rcAccount" not in m

    held = {"machines": [{"name": m["name"], "machineId": m["machineId"]} for m in machines]}
    assert script(env, tmp_path, scheduler, "getReturnRequests", held) == {
        "status": "complete", "message": "No machine is being returned or reclaimed.", "requests": [],
    }  # fmt: skip
    returned = script(env, tmp_path, scheduler, "requestReturnMachines", held)
    assert returned["requestId"].startswith("ret-")
    pending = script(env, tmp_path, scheduler, "getReturnRequests", held)["requests"]
    if scheduler == "hostfactory":
        assert {e["machine"] for e in pending} == {m["name"] for m in machines}
        # seconds left before the host goes: counted down from the configured 120, 0 once it is gone
        assert all(0 <= e["gracePeriod"] <= 120 for e in pending)
    else:
        assert {(e["machine"], e["machineId"]) for e in pending} == {(m["name"], m["machineId"]) for m in machines}

    done = poll_status(env, tmp_path, scheduler, returned["requestId"])
    assert done["status"] == "complete"
    assert {m["result"] for m in done["machines"]} == {"succeed"}
    assert {m["status"] for m in done["machines"]} == {"terminated"}
    # returning them again is not an error: a completed, empty return request ("No Active VM" in IBM's plugin)
    again = script(env, tmp_path, scheduler, "requestReturnMachines", held)
    assert again["requestId"] != returned["requestId"] and "already gone" in again["message"]
    assert poll_status(env, tmp_path, scheduler, again["requestId"])["status"] == "complete"


@pytest.mark.parametrize("scheduler", ["hostfactory", "lsf"])
def test_unknown_request_is_an_error_not_running(env: dict[str, str], tmp_path: Path, scheduler: str) -> None:
    out = script(env, tmp_path, scheduler, "getRequestStatus", {"requests": [{"requestId": "req-does-not-exist"}]})
    assert out["requests"] == [
        {"requestId": "req-does-not-exist", "status": "complete_with_error", "message": out["requests"][0]["message"],
         "machines": []}
    ]  # fmt: skip
    assert "not found" in out["requests"][0]["message"]


@pytest.mark.parametrize("scheduler", ["hostfactory", "lsf"])
def test_failures_exit_1_with_a_json_message(env: dict[str, str], tmp_path: Path, scheduler: str) -> None:
    out = script(env, tmp_path, scheduler, "requestMachines",
                 {"template": {"templateId": "nope", "machineCount": 1}}, ok=False)  # fmt: skip
    assert out["success"] is False and out["error_code"] == "TEMPLATE_NOT_FOUND" and "nope" in out["message"]
    gone = script(env, tmp_path, scheduler, "requestReturnMachines",
                  {"machines": [{"name": "h", "machineId": "i-unknown"}]}, ok=False)  # fmt: skip
    assert "i-unknown" in gone["message"]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = subprocess.run(
        ["/bin/sh", str(SCRIPTS / scheduler / "getRequestStatus.sh"), "-f", str(bad)],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 1 and json.loads(res.stdout)["error_code"] == "VALIDATION_ERROR"


def test_unknown_instance_type_is_left_out_with_a_warning(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.json").write_text(json.dumps({"templates": [
        {"templateId": "known", "imageId": "ami-1", "vmType": "r6i.2xlarge", "providerApi": "local"},
        {"templateId": "mystery", "imageId": "ami-1", "vmType": "zz9.huge", "providerApi": "local"},
        {"templateId": "declared", "imageId": "ami-1", "vmType": "zz9.huge", "providerApi": "local",
         "configuration": {"ncpus": 6, "memory_mb": 12000}},
    ]}))  # fmt: skip
    infile = tmp_path / "in.json"
    infile.write_text("{}")
    res = subprocess.run(
        ["/bin/sh", str(SCRIPTS / "hostfactory" / "getAvailableTemplates.sh"), "-f", str(infile)],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    by_id = {t["templateId"]: t["attributes"] for t in json.loads(res.stdout)["templates"]}
    assert by_id == {
        "known": {"type": ["String", "X86_64"], "ncpus": ["Numeric", "8"], "nram": ["Numeric", "65536"]},
        "declared": {"type": ["String", "X86_64"], "ncpus": ["Numeric", "6"], "nram": ["Numeric", "12000"]},
    }
    assert "mystery" in res.stderr and "scheduler.instance_types" in res.stderr


def test_configured_instance_types_table(env: dict[str, str], tmp_path: Path) -> None:
    cfg = Path(env["PLUGIN_CONFIG"])
    cfg.write_text(cfg.read_text() + "  instance_types:\n    zz9.huge: {ncpus: 32, memory_mb: 262144, ncores: 16}\n")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.yaml").write_text("templateId: big\nimageId: ami-1\nvmType: zz9.huge\n")
    out = script(env, tmp_path, "lsf", "getAvailableTemplates", {})
    (tpl,) = out["templates"]
    assert tpl["attributes"]["ncpus"] == ["Numeric", "32"] and tpl["attributes"]["ncores"] == ["Numeric", "16"]
    assert tpl["attributes"]["mem"] == ["Numeric", "262144"]


def test_scheduler_from_config_and_default_strategy_unchanged(env: dict[str, str], tmp_path: Path) -> None:
    """`scheduler.type` picks the strategy without --scheduler; the default strategy keeps the full record."""
    (tmp_path / "templates").mkdir()
    shutil.copy(SCRIPTS / "hostfactory" / "pluginsdk_templates.json", tmp_path / "templates")
    base = ["requests", "status", "-d", '{"requests": [{"requestId": "req-x"}]}']
    hf = invoke({**env, "PLUGIN_SCHEDULER": "hostfactory"}, *base)
    assert hf.code == 0 and hf.json()["requests"][0]["status"] == "complete_with_error"
    plain = invoke(env, "requests", "status", "req-x")
    # the default strategy: one unknown id is not found (exit 1), as `requests show` does
    assert plain.code == 1 and plain.json()["error_code"] == "REQUEST_NOT_FOUND"


@pytest.mark.parametrize("scheduler", ["hostfactory", "lsf"])
def test_usage_errors_are_json_for_schedulers(env: dict[str, str], scheduler: str) -> None:
    res = subprocess.run(
        ["/bin/sh", str(SCRIPTS / scheduler / "getRequestStatus.sh"), "--no-such-option"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 1
    out = json.loads(res.stdout)
    assert out["success"] is False and "--no-such-option" in out["message"]


def test_lsf_refuses_template_ids_with_underscores(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.json").write_text(json.dumps({"templates": [
        {"templateId": "ok-one", "imageId": "ami-1", "vmType": "m5.large", "providerApi": "local"},
        {"templateId": "bad_one", "imageId": "ami-1", "vmType": "m5.large", "providerApi": "local"},
    ]}))  # fmt: skip
    listed = script(env, tmp_path, "lsf", "getAvailableTemplates", {})
    assert [t["templateId"] for t in listed["templates"]] == ["ok-one"]
    assert "bad_one" in listed["message"] and "underscore" in listed["message"]
    refused = script(env, tmp_path, "lsf", "requestMachines",
                     {"template": {"templateId": "bad_one", "machineCount": 1}}, ok=False)  # fmt: skip
    assert refused["error_code"] == "VALIDATION_ERROR" and "underscores" in refused["message"]
    # HostFactory has no such rule
    hf = script(env, tmp_path, "hostfactory", "getAvailableTemplates", {})
    assert sorted(t["templateId"] for t in hf["templates"]) == ["bad_one", "ok-one"]


def test_declared_attributes_win_and_extras_pass_through(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.json").write_text(json.dumps({"templates": [
        {"templateId": "declared", "imageId": "ami-1", "vmType": "m5.xlarge", "providerApi": "local",
         "attributes": {"ncpus": ["Numeric", "2"], "zone": ["String", "eu-west-1b"], "gpu": ["Numeric", 1],
                        "broken": "not a pair"}},
        {"templateId": "unknown-type", "imageId": "ami-1", "vmType": "zz9.huge", "providerApi": "local",
         "attributes": {"type": ["String", "X86_64"], "ncpus": ["Numeric", "64"], "mem": ["Numeric", "512000"]}},
    ]}))  # fmt: skip
    out = script(env, tmp_path, "lsf", "getAvailableTemplates", {})
    by_id = {t["templateId"]: t["attributes"] for t in out["templates"]}
    assert by_id["declared"] == {
        "type": ["String", "X86_64"], "ncpus": ["Numeric", "2"], "mem": ["Numeric", "16384"],
        "ncores": ["Numeric", "2"], "zone": ["String", "eu-west-1b"], "gpu": ["Numeric", "1"],
    }  # fmt: skip
    # an instance type we cannot size is listed when the file declares what the scheduler needs
    assert by_id["unknown-type"] == {
        "type": ["String", "X86_64"],
        "ncpus": ["Numeric", "64"],
        "mem": ["Numeric", "512000"],
    }


@pytest.mark.parametrize("raised", [False, True], ids=["default-limit", "raised-limit"])
@pytest.mark.parametrize("scheduler", ["hostfactory", "lsf"])
def test_input_nested_past_the_limit_is_refused(
    env: dict[str, str], tmp_path: Path, scheduler: str, raised: bool
) -> None:
    """The scripts' input is refused past `MAX_DEPTH`, also when the interpreter's recursion limit is raised
    far past the file's depth (the program the script runs set by `PLUGINSDK_BIN`)."""
    if raised:
        entry = tmp_path / "raised.py"
        entry.write_text("import sys\nsys.setrecursionlimit(1 << 20)\nfrom pluginsdk._entry import main\nmain()\n")
        env = {**env, "PLUGINSDK_BIN": f"{sys.executable} {entry}"}

    def status(levels: int) -> subprocess.CompletedProcess[str]:
        infile = tmp_path / f"in-{levels}.json"
        deep = "[" * (levels - 3) + "]" * (levels - 3)  # inside the object, `requests` and its item
        infile.write_text('{"requests": [{"requestId": "req-none", "extra": ' + deep + "}]}")
        return subprocess.run(
            ["/bin/sh", str(SCRIPTS / scheduler / "getRequestStatus.sh"), "-f", str(infile)],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip

    at = status(MAX_DEPTH)
    assert at.returncode == 0 and json.loads(at.stdout)["requests"][0]["requestId"] == "req-none", at.stdout + at.stderr
    for levels in (MAX_DEPTH + 1, 5000):
        over = status(levels)
        out = json.loads(over.stdout)
        assert over.returncode == 1 and out["error_code"] == "VALIDATION_ERROR", over.stdout + over.stderr
        assert TOO_DEEP in out["message"] and f"in-{levels}.json" in out["message"]
