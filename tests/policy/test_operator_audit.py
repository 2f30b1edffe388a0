"""What operators change is in the audit log with its caller, from every interface: template writes, requests,
cancellations, returns, readiness signals (SDK on both backends, the CLI, MCP; the console:
tests/console/test_console_audit.py); and the catalog declares, operation
by operation, what is audited, which commands write the policy, the lock-out probes and the 429 reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends.local.auth.lockout import route_probes
from pluginsdk import PluginSDK
from pluginsdk.operations import CATALOG
from tests.support.cli import cli_environment, invoke, ok


async def test_template_writes_requests_and_returns_are_audited_with_the_caller(sdk: PluginSDK) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1", instance_type="t3.small")
    await sdk.create_template(template_id="dry", image_id="ami-1", validate_only=True)  # stores nothing
    await sdk.update_template("web", image_id="ami-2")
    req = await sdk.create_request("web", 2, wait=True)
    machines = [m.machine_id for m in req.machines]
    await sdk.mark_machine_ready(machines[0])
    returned = await sdk.create_return_request(machines)
    other = await sdk.create_request("web", 1)
    await sdk.cancel_request(other.request_id or "", reason="not needed", force=True)
    await sdk.delete_template("web")

    templates = (await sdk.list_audit_records(target_type="template", target_id="web")).records
    assert [r.action for r in templates] == ["create_template", "update_template", "delete_template"]
    create, update, delete = templates
    assert create.before is None and create.after["image_id"] == "ami-1" and create.actor == "administrator"
    assert update.before == create.after and update.after["image_id"] == "ami-2"
    assert delete.before == update.after and delete.after is None  # who deleted it, and what it was
    assert (await sdk.list_audit_records(target_type="template", target_id="dry")).records == []

    requests = (await sdk.list_audit_records(target_type="request")).records
    assert [(r.action, r.target_id) for r in requests] == [
        ("create_request", req.request_id),
        ("create_request", other.request_id),
        ("cancel_request", other.request_id),
    ]
    assert requests[0].after["template_id"] == "web" and requests[0].after["requested_count"] == 2
    assert requests[2].after["reason"] == "not needed" and all(r.actor == "administrator" for r in requests)
    ready = (await sdk.list_audit_records(action="mark_machine_ready")).records
    assert [(r.target_type, r.target_id) for r in ready] == [("machine", machines[0])]
    returns = (await sdk.list_audit_records(target_type="returnRequest")).records
    assert [(r.action, r.target_id) for r in returns] == [("create_return_request", returned.request_id)]
    assert sorted(returns[0].after["machine_ids"]) == sorted(machines)
    exported = await sdk.list_audit_records(actor="administrator", jsonl=True, page_size=1000)
    actions = {json.loads(line)["action"] for line in (exported.jsonl or "").splitlines()}
    assert {"create_template", "delete_template", "create_request", "cancel_request"} <= actions


def test_the_cli_records_its_caller_too(tmp_path: Path) -> None:
    env = cli_environment(tmp_path)
    ok(env, "templates", "create", "--template-id", "cli-web", "--image-id", "ami-1")
    ok(env, "templates", "delete", "cli-web")
    res = invoke(env, "auth", "audit", "--target-type", "template", "--target-id", "cli-web")
    assert res.code == 0, res.err
    records = res.json()["records"]
    assert [r["action"] for r in records] == ["create_template", "delete_template"]
    assert records[1]["before"]["template_id"] == "cli-web" and records[0]["actor"]


async def test_mcp_tools_record_their_caller_too(sdk: PluginSDK) -> None:
    from tests.mcp.helpers import connect, data

    async with connect(sdk) as client:
        data(await client.call_tool("create_template", {"template_id": "mcp-web", "image_id": "ami-1"}))
        data(await client.call_tool("delete_template", {"template_id": "mcp-web"}))
    records = (await sdk.list_audit_records(target_type="template", target_id="mcp-web")).records
    assert [(r.action, r.actor) for r in records] == [
        ("create_template", "administrator"),
        ("delete_template", "administrator"),
    ]


def test_every_command_says_whether_it_is_audited() -> None:
    commands = [s for s in CATALOG.values() if s.kind == "command"]
    assert commands
    for spec in commands:
        audit, why = spec.policy.audit, spec.policy.unaudited
        assert (audit is None) != (why is None), spec.name
        if audit is not None:
            inputs = set(spec.cls.model_fields) | set(getattr(spec.result_type, "model_fields", ()))
            assert not audit.ids or set(audit.ids) & inputs, spec.name
    audited = {s.name for s in commands if s.policy.audit is not None}
    operators = {"create_template", "update_template", "delete_template", "create_request", "cancel_request",
                 "create_return_request", "mark_machine_ready"}  # fmt: skip
    assert operators <= audited
    policy_writes = {s.name for s in commands if s.policy.writes_policy}
    assert all(CATALOG[n].policy.audit is not None for n in policy_writes)
    assert {s.category for s in commands if s.policy.writes_policy} == {"roles", "userRoles", "constraints"}
    assert not any(s.policy.audit or s.policy.writes_policy for s in CATALOG.values() if s.kind != "command")


def test_lockout_probes_are_routes_of_the_catalog() -> None:
    routes = {(s.method, s.route) for s in CATALOG.values() if s.route}
    probes = route_probes()
    assert set(probes) <= routes
    assert set(probes) == {
        ("GET", "/roles"), ("POST", "/roles"), ("PUT", "/roles"),
        ("GET", "/user-roles"), ("POST", "/user-roles"), ("PUT", "/user-roles"), ("DELETE", "/user-roles"),
    }  # fmt: skip


@pytest.mark.parametrize(("name", "why"), [("login", "throttled"), ("create_request", "quota")])
def test_the_429_reasons_are_declared_on_the_operation(name: str, why: str) -> None:
    spec = CATALOG[name]
    assert spec.rest is not None and spec.rest.too_many == why
    from pluginsdk.server._openapi import _TOO_MANY_WHY

    assert set(_TOO_MANY_WHY) == {s.rest.too_many for s in CATALOG.values() if s.rest and s.rest.too_many}
