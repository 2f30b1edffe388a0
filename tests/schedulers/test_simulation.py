"""A scheduler simulation: HostFactory (and LSF) driving the shipped scripts, each call a separate process.

200 machines in four requests on the `local` provider with boot failures and a boot delay; the
scheduler polls status, returns machines by host name only (some while they are still starting), and
the provider refuses some terminate calls (`terminate_failure_rate`, deterministic under the seed: with
seed 4 the 2nd, 3rd and 4th terminate calls fail, the 1st succeeds). Every output is checked against the
IBM schema (tests/schedulers/ibm_contract.py). Invariants:
- a machine's name never changes;
- every machine reported `succeed` is eventually returned, and exactly one return request reports it
  `succeed`;
- every request ends terminal within a bounded number of polls;
- no return stays `running` after its provider call failed (a return whose every machine was refused
  is terminal the first time it is seen), and the refused machines can be returned again;
- a provisioning request seen `complete` never turns `complete_with_error` when its machines are returned.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.schedulers.ibm_contract import validate

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
PLUGINSDK = str(Path(sys.executable).with_name("pluginsdk"))

REQUESTS, PER_REQUEST = 4, 50
MAX_POLLS = 20
POLL_SECONDS = 0.25
EARLY_RETURNS = 6
SIMULATED = (
    "    boot_delay: 3\n    terminate_delay: 0.2\n    failure_rate: 0.1\n    terminate_failure_rate: 0.3\n    seed: 4\n"
)


class Scheduler:
    """Runs the shipped scripts as the scheduler does: input in a file, `-f FILE`, JSON on stdout."""

    def __init__(self, kind: str, tmp_path: Path, local: str = SIMULATED) -> None:
        self.kind = kind
        self.dir = tmp_path
        cfg = tmp_path / "pluginsdk.yaml"
        cfg.write_text(f"provider:\n  local:\n{local}scheduler:\n  grace_period: 60\n")
        (tmp_path / "templates").mkdir()
        attributes = {"zone": ["String", "us-east-1a"]} if kind == "lsf" else {"ncpus": ["Numeric", "3"]}
        (tmp_path / "templates" / "sim.json").write_text(json.dumps({"templates": [{
            "templateId": "sim-4", "maxNumber": 100, "vmType": "m5.xlarge", "imageId": "ami-1",
            "providerApi": "local", "attributes": attributes,
        }]}))  # fmt: skip
        base = {k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")}
        self.env = {
            **base,
            "PLUGIN_STORAGE_PATH": str(tmp_path / "store.db"),
            "PLUGIN_CONFIG": str(cfg),
            "PLUGIN_TEMPLATES_DIR": str(tmp_path / "templates"),
            "PLUGINSDK_BIN": PLUGINSDK,
        }
        self.calls = 0

    def __call__(self, name: str, payload: Any) -> Any:
        self.calls += 1
        infile = self.dir / f"in-{self.calls}.json"
        infile.write_text(json.dumps(payload))
        res = subprocess.run(
            ["/bin/sh", str(SCRIPTS / self.kind / f"{name}.sh"), "-f", str(infile)],
            capture_output=True, text=True, env=self.env, timeout=60, check=False,
        )  # fmt: skip
        assert res.returncode == 0, f"{name} {payload}: {res.stdout} {res.stderr}"
        out = json.loads(res.stdout)
        validate(self.kind, name, out)
        return out


@pytest.mark.parametrize("kind", ["hostfactory", "lsf"])
def test_scheduler_simulation(kind: str, tmp_path: Path) -> None:
    run = Scheduler(kind, tmp_path)
    (tpl,) = run("getAvailableTemplates", {})["templates"]
    if kind == "lsf":  # a declared extra resource passes through beside the derived ones
        assert tpl["attributes"]["zone"] == ["String", "us-east-1a"] and tpl["attributes"]["ncpus"][1] == "4"
    else:  # a declared attribute wins over the one derived from m5.xlarge
        assert tpl["attributes"]["ncpus"] == ["Numeric", "3"] and tpl["attributes"]["nram"] == ["Numeric", "16384"]

    provision: list[str] = []
    for i in range(REQUESTS):
        payload: dict[str, Any] = {"template": {"templateId": "sim-4", "machineCount": PER_REQUEST}}
        if kind == "lsf":
            payload["rc_account"] = f"proj-{i}"
        provision.append(run("requestMachines", payload)["requestId"])

    names: dict[str, str] = {}  # machineId -> the one name ever reported
    account: dict[str, str] = {}  # LSF: machineId -> rcAccount on its provisioning request
    succeeded: set[str] = set()
    to_return: set[str] = set()  # names the scheduler still has to give back
    asked: dict[str, set[str]] = {}  # return request -> the names it was asked to take back
    returned_by: dict[str, list[str]] = {}  # machineId -> return requests that report it `succeed`
    returns: list[str] = []
    status_of: dict[str, str] = {}
    seen_complete: set[str] = set()
    refused = 0
    early: set[str] = set()
    origin: dict[str, str] = {}  # name -> provisioning request
    failed_returns = 0

    def all_refused(entry: dict[str, Any]) -> bool:
        return all(m["result"] == "fail" and "provider failed" in m["message"] for m in entry["machines"])

    def give_back(batch: set[str]) -> None:
        if batch:
            out = run("requestReturnMachines", {"machines": [{"name": n} for n in sorted(batch)]})
            assert out["message"]
            assert out["requestId"] not in returns
            returns.append(out["requestId"])
            asked[out["requestId"]] = set(batch)
            to_return.difference_update(batch)

    for poll in range(MAX_POLLS):
        out = run("getRequestStatus", {"requests": [{"requestId": r} for r in provision + returns]})
        assert [e["requestId"] for e in out["requests"]] == provision + returns
        for entry in out["requests"]:
            rid, status = entry["requestId"], entry["status"]
            assert not (rid in seen_complete and status != "complete"), f"{rid} left complete: {entry}"
            if status == "complete":
                seen_complete.add(rid)
            first_seen = rid not in status_of
            status_of[rid] = status
            for m in entry["machines"]:
                mid = m["machineId"]
                assert names.setdefault(mid, m["name"]) == m["name"], f"{mid} renamed"
                if kind == "lsf":
                    assert account.setdefault(mid, m["rcAccount"]) == m["rcAccount"], f"{mid} changed account"
                if rid.startswith("req-"):
                    origin[m["name"]] = rid
                    if m["result"] == "succeed" and mid not in succeeded:
                        succeeded.add(mid)
                        if not any(m["name"] in batch for batch in asked.values()):
                            to_return.add(m["name"])
                    if poll == 0 and rid == provision[-1] and m["result"] == "executing" and len(early) < EARLY_RETURNS:
                        early.add(m["name"])  # the newest request's: the furthest from running
                elif status != "running" and rid in asked:  # a finished return: what it took, what was refused
                    if m["result"] == "succeed":
                        returned_by.setdefault(mid, []).append(rid)
                    elif m["result"] == "fail":
                        refused += 1
                        if mid in succeeded:
                            to_return.add(m["name"])  # returnable again
            if rid.startswith("ret-") and status != "running":
                asked.pop(rid, None)  # names it did not list were already gone (failed at boot)
            if rid.startswith("ret-") and first_seen and entry["machines"] and all_refused(entry):
                assert status != "running", f"{rid} stays running after its provider call failed: {entry}"
                failed_returns += 1
        if poll == 0:
            give_back(early)  # still starting: returning them stops their launch
        known = [{"name": names[mid], "machineId": mid} for mid in sorted(succeeded)]
        listed = run("getReturnRequests", {"machines": known})["requests"]
        if kind == "hostfactory":
            assert all(0 <= e["gracePeriod"] <= 60 for e in listed)
        else:
            assert all(e["rcAccount"] == account[e["machineId"]] for e in listed)
        for rid in provision:  # one return per provisioning request's hosts, as they come up
            give_back({n for n in to_return if origin[n] == rid})
        if all(s != "running" for s in status_of.values()) and not to_return and not asked:
            break
        time.sleep(POLL_SECONDS)
    else:
        running = [r for r, s in status_of.items() if s == "running"]
        pytest.fail(f"not done after {MAX_POLLS} polls: running {running}, to return {to_return}, asked {asked}")

    assert len(names) == REQUESTS * PER_REQUEST
    assert len(set(names.values())) == len(names), "two machines share a host name"
    assert refused > 0 and failed_returns > 0, "the provider failure was never injected"
    assert early, "no machine was still starting at the first poll"
    assert succeeded, "no machine came up"
    for mid in succeeded:
        assert len(returned_by.get(mid, [])) == 1, f"{mid} returned {returned_by.get(mid)}"
    # machines returned while starting and never run are reported on their request as withdrawn
    final = run("getRequestStatus", {"requests": [{"requestId": r} for r in provision]})["requests"]
    by_name = {m["name"]: m for e in final for m in e["machines"]}
    withdrawn = [by_name[n] for n in early if "before it was running" in by_name[n]["message"]]
    assert withdrawn, [by_name[n] for n in early]
    assert all(m["result"] == "fail" for m in withdrawn)
    # the others of them came up before the return reached them, or failed to boot
    assert all(by_name[n]["result"] in ("succeed", "fail") for n in early)


def _strings(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in ("machineId", "name", "result", "privateIpAddress", "publicIpAddress", "message")}


@pytest.mark.parametrize("kind", ["hostfactory", "lsf"])
def test_string_fields_are_never_null(kind: str, tmp_path: Path) -> None:
    """A machine without an address (none public on `local`) reads `""` in every field IBM types as a string,
    never `null`; one the provider refused to take back keeps the address it has."""
    run = Scheduler(kind, tmp_path, local="    boot_delay: 0\n    terminate_failure_rate: 1.0\n    seed: 1\n")
    made = run("requestMachines", {"template": {"templateId": "sim-4", "machineCount": 1}})["requestId"]
    for _ in range(MAX_POLLS):
        (entry,) = run("getRequestStatus", {"requests": [{"requestId": made}]})["requests"]
        if entry["status"] != "running":
            break
        time.sleep(POLL_SECONDS)
    (machine,) = entry["machines"]
    assert machine["result"] == "succeed" and machine["privateIpAddress"] and machine["publicIpAddress"] == ""
    back = run("requestReturnMachines", {"machines": [{"name": machine["name"]}]})["requestId"]
    (entry,) = run("getRequestStatus", {"requests": [{"requestId": back}]})["requests"]
    (refused,) = entry["machines"]
    assert refused["result"] == "fail" and "provider failed" in refused["message"]
    # still running: it keeps its address (none public on `local`)
    assert (refused["privateIpAddress"], refused["publicIpAddress"]) == (machine["privateIpAddress"], "")
    for m in (machine, refused):
        assert None not in _strings(m).values(), m
