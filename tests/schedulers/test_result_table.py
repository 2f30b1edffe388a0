"""The result/status table written in docs/schedulers.md is what both scheduler strategies render, row by row."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pluginsdk.config import Settings
from pluginsdk.models import Machine, MachineStatus, Request, RequestList, RequestStatus, RequestStatusList, RequestType
from pluginsdk.models.statuses import RECLAIMED, RETURNED_BEFORE_RUNNING
from pluginsdk.schedulers import get_strategy
from tests.schedulers.ibm_contract import validate

DOC = Path(__file__).resolve().parents[2] / "docs" / "schedulers.md"


def _rows(header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line starts with `header`."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


REQUEST_ROWS = _rows("| request type | our status | scheduler status |")
MACHINE_ROWS = _rows("| request type | machine | result | status |")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _machine(case: str) -> Machine:
    """The machine a table row describes."""
    special: dict[str, dict[str, Any]] = {
        "returned after running": {"status": MachineStatus.TERMINATED, "return_request_id": "ret-1"},
        "withdrawn (returned while starting)": {
            "status": MachineStatus.TERMINATED, "return_request_id": "ret-1", "status_reason": RETURNED_BEFORE_RUNNING,
        },
        "reclaimed by the provider": {
            "status": MachineStatus.TERMINATED, "return_request_id": "ret-2",
            "status_reason": f"{RECLAIMED}: spot interruption",
        },
    }  # fmt: skip
    fields = special.get(case) or {"status": MachineStatus(case)}
    if fields["status"] is MachineStatus.FAILED:
        fields["status_reason"] = "Simulated boot failure"
    return Machine(machine_id="i-0123", request_id="req-1", template_id="t", name="ip-10-0-0-1.local", **fields)


def _request(kind: str, status: RequestStatus, machines: list[Machine], **extra: Any) -> Request:
    return Request(
        request_id=("ret-" if kind == "return" else "req-") + "1",
        request_type=RequestType(kind if kind == "return" else "provision"),
        status=status,
        machines=machines,
        created_at=T0,
        **extra,
    )


def test_the_doc_has_every_state() -> None:
    assert {(r[0], r[1]) for r in MACHINE_ROWS} >= {
        (k, s.value) for k in ("provision", "return") for s in MachineStatus
    }
    assert {(r[0], r[1].split(",")[0]) for r in REQUEST_ROWS} == {
        (k, s.value) for k in ("provision", "return") for s in RequestStatus if not (k == "return" and s == "cancelled")
    }


@pytest.mark.parametrize("scheduler", ["hostfactory", "lsf"])
@pytest.mark.parametrize("row", MACHINE_ROWS, ids=lambda r: f"{r[0]}-{r[1]}")
def test_machine_rows(scheduler: str, row: list[str]) -> None:
    kind, case, result, status = row
    if case == "refused by the provider":
        refused = {"i-0123": {"name": "ip-10-0-0-1.local", "reason": "Throttling"}}
        r = _request(kind, RequestStatus.FAILED, [], provider_data={"failed_machines": refused})
    else:
        r = _request(kind, RequestStatus.RUNNING, [_machine(case)])
    out = get_strategy(scheduler).render("get_request_status", {}, _status_list(r), Settings())
    validate(scheduler, "getRequestStatus", out)
    (entry,) = out["requests"][0]["machines"]
    assert entry["result"] == result
    assert entry.get("status", "(left out)") == status
    if result == "fail":
        assert entry["message"]


@pytest.mark.parametrize("scheduler", ["hostfactory", "lsf"])
@pytest.mark.parametrize("row", REQUEST_ROWS, ids=lambda r: f"{r[0]}-{r[1]}")
def test_request_rows(scheduler: str, row: list[str]) -> None:
    kind, ours, theirs = row
    status, _, qualifier = ours.partition(", ")
    machines = [_machine("running")]
    if qualifier.startswith("every machine withdrawn"):
        machines = [_machine("withdrawn (returned while starting)")] * 2
    r = _request(kind, RequestStatus(status), machines)
    out = get_strategy(scheduler).render("get_request_status", {}, _status_list(r), Settings())
    validate(scheduler, "getRequestStatus", out)
    assert out["requests"][0]["status"] == theirs
    assert out["requests"][0]["message"]


def _status_list(r: Request) -> Any:
    return RequestStatusList(requests=[r])


@pytest.mark.parametrize("scheduler", ["hostfactory", "lsf"])
def test_schema_rejects_what_the_contract_does_not_allow(scheduler: str) -> None:
    """The schema can fail: a status outside IBM's list, a silent failure, a non-integer launch time."""
    import jsonschema

    good = {"machineId": "i-1", "name": "h", "result": "succeed", "status": "running", "privateIpAddress": "10.0.0.1",
            "launchtime": 1, "message": "", "rcAccount": "default"}  # fmt: skip
    validate(scheduler, "getRequestStatus", {"requests": [{"requestId": "r", "status": "running", "machines": [good]}]})
    for bad in ({"status": "pending"}, {"result": "fail"}, {"launchtime": "1"}, {"result": "done"}):
        doc = {"requests": [{"requestId": "r", "status": "running", "machines": [good | bad]}]}
        with pytest.raises(jsonschema.ValidationError):
            validate(scheduler, "getRequestStatus", doc)
    with pytest.raises(jsonschema.ValidationError):
        validate(scheduler, "getRequestStatus", {"requests": [{"requestId": "r", "status": "failed", "machines": []}]})
    with pytest.raises(jsonschema.ValidationError):
        validate(scheduler, "getReturnRequests", {"message": "", "requests": []})


def test_grace_period_counts_down_to_zero() -> None:
    hf = get_strategy("hostfactory")
    settings = Settings()
    now = datetime.now(UTC)
    up = Machine(machine_id="i-1", request_id="req-1", template_id="t", name="a", status=MachineStatus.SHUTTING_DOWN)
    gone = up.model_copy(update={"machine_id": "i-2", "name": "b", "status": MachineStatus.TERMINATED})
    ret = Request(request_id="ret-1", request_type=RequestType.RETURN, status=RequestStatus.RUNNING,
                  machines=[up, gone], created_at=now - timedelta(seconds=100))  # fmt: skip
    out = hf.render("list_return_requests", {}, RequestList(requests=[ret]), settings)
    validate("hostfactory", "getReturnRequests", out)
    grace = {e["machine"]: e["gracePeriod"] for e in out["requests"]}
    assert 195 <= grace["a"] <= 200 and grace["b"] == 0
    assert re.search(r"\d+ machines", out["message"])
