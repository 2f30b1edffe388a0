"""Policy revisions (read your own writes) and the audit log, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pluginsdk import PermissionDeniedError, PluginSDK
from pluginsdk.errors import StateConflictError
from pluginsdk.operations import CATALOG
from tests.auth.conftest import acting_as, managed_app
from tests.support.backends import open_sdk


async def _constraint(sdk: PluginSDK, cid: str, method: str = "GET") -> int | None:
    written = await sdk.create_constraint(
        cid,
        name=cid,
        description="test constraint",
        object_type="asset",
        criteria_or=[{"field": "databaseId", "operator": "equals", "value": "db1"}],
        group_permissions=[{"groupId": "editor", "permission": method, "permissionType": "allow"}],
    )
    return written.revision


async def test_writes_report_revisions_and_checks_honour_them(sdk: PluginSDK) -> None:
    role = await sdk.create_role(role_name="editor", description="edits things")
    assert role.revision is not None
    r1 = await _constraint(sdk, "c1")
    assert r1 is not None and r1 > role.revision
    assigned = await sdk.create_user_roles("alice", ["editor"])
    assert assigned.revision is not None and assigned.revision > r1
    got = await sdk.check_access("asset", "GET", user_id="alice", attributes={"databaseId": "db1"},
                                 at_least_revision=assigned.revision)  # fmt: skip
    assert got.allowed and got.revision >= assigned.revision
    deleted = await sdk.delete_constraint("c1")
    assert deleted.revision is not None and deleted.revision > assigned.revision
    got = await sdk.check_access("asset", "GET", user_id="alice", attributes={"databaseId": "db1"},
                                 at_least_revision=deleted.revision)  # fmt: skip
    assert not got.allowed and got.revision == deleted.revision
    with pytest.raises(StateConflictError) as exc:
        await sdk.check_access("asset", "GET", roles=["editor"], at_least_revision=deleted.revision + 1000)
    assert exc.value.status == 409
    imported = await sdk.import_constraints_template(constraints=[
        {"constraintId": "c2", "name": "c2", "description": "imported", "objectType": "asset",
         "criteriaOr": [{"field": "databaseId", "operator": "equals", "value": "db2"}],
         "groupPermissions": [{"groupId": "editor", "permission": "GET", "permissionType": "allow"}]}])  # fmt: skip
    assert imported.revision is not None and imported.revision > deleted.revision


async def test_audit_log_records_changes_without_secrets(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_role(role_name="editor", description="edits things")
    await _constraint(sdk, "c1")
    await sdk.update_constraint(
        "c1",
        name="c1",
        description="now PUT",
        object_type="asset",
        criteria_or=[{"field": "databaseId", "operator": "equals", "value": "db1"}],
        group_permissions=[{"groupId": "editor", "permission": "PUT", "permissionType": "allow"}],
    )
    await sdk.delete_constraint("c1")
    await sdk.create_user_roles("alice", ["editor"])
    key = await sdk.create_api_key(api_key_name="svc-key", description="service key", user_id="alice")
    await sdk.delete_api_key(key.api_key_id)

    page = await sdk.list_audit_records(target_type="constraint", target_id="c1")
    assert [r.action for r in page.records] == ["create_constraint", "update_constraint", "delete_constraint"]
    create, update, delete = page.records
    assert create.before is None and create.after["groupPermissions"][0]["permission"] == "GET"
    assert update.before == create.after and update.after["description"] == "now PUT"
    assert delete.before == update.after and delete.after is None
    assert create.revision < update.revision < delete.revision and create.actor == "administrator"

    keys = await sdk.list_audit_records(target_type="apiKey", target_id=key.api_key_id)
    assert [r.action for r in keys.records] == ["create_api_key", "delete_api_key"]
    assert keys.records[0].target_id == key.api_key_id and keys.records[0].after["api_key_name"] == "svc-key"
    dumped = json.dumps([r.to_dict() for r in keys.records])
    assert key.api_key not in dumped and "key_hash" not in dumped

    roles = await sdk.list_audit_records(target_type="userRole", target_id="alice")
    assert roles.records[0].before is None and roles.records[0].after == ["editor"]

    # Paging and export: every record exactly once, in order; JSON lines parse back.
    seen, token = [], None
    while True:
        page = await sdk.list_audit_records(page_size=2, starting_token=token, jsonl=True)
        assert page.jsonl is not None
        assert [json.loads(line)["record_id"] for line in page.jsonl.splitlines()] == [
            r.record_id for r in page.records
        ]
        seen += [r.record_id for r in page.records]
        token = page.next_token
        if token is None:
            break
    everything = await sdk.list_audit_records(page_size=1000)
    assert len(everything.records) >= 7 and everything.next_token is None
    assert seen == [r.record_id for r in everything.records] == sorted(seen)
    assert (await sdk.list_audit_records(actor="nobody")).records == []
    later = await sdk.list_audit_records(since="2999-01-01T00:00:00Z")
    assert later.records == []

    # Readers cannot read the log, and nothing in the catalog writes or deletes records.
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        with pytest.raises(PermissionDeniedError):
            await reader.list_audit_records()
    assert [s.name for s in CATALOG.values() if s.category == "audit"] == ["list_audit_records"]


@pytest.mark.parametrize("backend_kind", ["local", "remote"])
async def test_decisions_are_logged_when_sampled(backend_kind: str, tmp_path: Path) -> None:
    app = {"audit": {"decisionSampleRate": 1}}
    async with open_sdk(backend_kind, tmp_path, app=app) as sdk:
        admin = {"roles": ["admin"], "objectType": "asset", "method": "GET", "attributes": {"databaseId": "d"}}
        await sdk.check_access_batch([admin, {"userId": "bob", "objectType": "asset", "method": "PUT"}])
        logged = await sdk.list_audit_records(action="decision")
        assert [(r.target_id, r.after["allowed"]) for r in logged.records] == [("roles:admin", True), ("bob", False)]
        bare = await sdk.check_access_batch([admin], allowed_only=True)  # the decisions alone are logged too
        assert bare.allowed == [True] and bare.decisions == []
        assert len((await sdk.list_audit_records(action="decision")).records) == 3
        assert (await sdk.check_access("asset", "GET", roles=["admin"], attributes={"databaseId": "d"})).allowed
        logged = await sdk.list_audit_records(action="decision")  # a single check is logged as a batch's answer
        assert len(logged.records) == 4 and {r.target_id for r in logged.records} == {"roles:admin", "bob"}
    async with open_sdk(backend_kind, tmp_path / "off") as sdk:
        await sdk.check_access("asset", "GET", roles=["admin"])
        assert (await sdk.list_audit_records(action="decision")).records == []


async def test_managed_user_changes_are_audited_without_secrets(backend_kind: str, tmp_path: Path) -> None:
    async with open_sdk(backend_kind, tmp_path, app=managed_app()) as sdk:
        created = await sdk.create_managed_user("carol", email="carol@example.com")
        await sdk.update_managed_user("carol", phone="+15551234567")
        await sdk.delete_managed_user("carol")
        page = await sdk.list_audit_records(target_type="managedUser", target_id="carol")
    actions = [r.action for r in page.records]
    assert actions == ["create_managed_user", "update_managed_user", "delete_managed_user"]
    assert page.records[0].after["email"] == "carol@example.com" and page.records[2].after is None
    keys = {k.lower() for r in page.records for state in (r.before, r.after) if state for k in state}
    assert keys and not {k for k in keys if any(w in k for w in ("password", "totp", "hash", "secret"))}
    dumped = json.dumps([r.to_dict() for r in page.records]).lower()
    temporary = getattr(created, "temporary_password", None)
    assert not temporary or temporary.lower() not in dumped


async def test_every_decision_point_call_takes_at_least_revision(
    sdk: PluginSDK, monkeypatch: pytest.MonkeyPatch
) -> None:
    """what-if and policy tests read their own writes like check does; a revision the store has not reached is a
    409 of its own code (REVISION_NOT_REACHED), on every one of them."""
    from backends.local.auth.handlers import policy_checks
    from pluginsdk import RevisionNotReachedError

    monkeypatch.setattr(policy_checks, "_WAIT_MAX", 0.1)  # the server of the remote backend runs in this process
    await sdk.create_role(role_name="editor", description="edits things")
    written = await _constraint(sdk, "c1")
    assert written is not None
    test = {"name": "editor reads db1", "roles": ["editor"], "objectType": "asset",
            "attributes": {"databaseId": "db1"}, "method": "GET", "expect": "allow"}  # fmt: skip
    objects = [{"objectType": "asset", "attributes": {"databaseId": "db1"}}]
    report = await sdk.what_if(delete_constraint_ids=["c1"], objects=objects, at_least_revision=written)
    assert report.revision >= written and report.allowed_to_denied >= 1
    ran = await sdk.run_policy_tests(tests=[test], at_least_revision=written)
    assert ran.passed and ran.revision >= written
    ahead = written + 1000
    for call in (
        sdk.check_access("asset", "GET", roles=["editor"], at_least_revision=ahead),
        sdk.what_if(delete_constraint_ids=["c1"], at_least_revision=ahead),
        sdk.run_policy_tests(tests=[test], at_least_revision=ahead),
    ):
        with pytest.raises(RevisionNotReachedError) as exc:
            await call
        assert (exc.value.status, exc.value.error_code) == (409, "REVISION_NOT_REACHED")
        assert isinstance(exc.value, StateConflictError) and exc.value.details["field"] == "at_least_revision"


async def test_an_imported_constraint_is_found_in_the_audit_log_by_its_own_id(sdk: PluginSDK) -> None:
    await sdk.create_role(role_name="editor", description="edits things")
    await _constraint(sdk, "c1")
    body = {"name": "imported", "description": "imported", "objectType": "asset",
            "criteriaOr": [{"field": "databaseId", "operator": "equals", "value": "db2"}],
            "groupPermissions": [{"groupId": "editor", "permission": "GET", "permissionType": "allow"}]}  # fmt: skip
    done = await sdk.import_constraints_template(
        constraints=[{**body, "constraintId": "c1"}, {**body, "constraintId": "c2"}, body], overwrite=True
    )
    generated = done.constraint_ids[2]
    for cid, existed in (("c1", True), ("c2", False), (generated, False)):
        records = (await sdk.list_audit_records(target_type="constraint", target_id=cid)).records
        imported = [r for r in records if r.action == "import_constraints_template"]
        assert len(imported) == 1, (cid, records)
        record = imported[0]
        assert record.target_id == cid and record.after["constraintId"] == cid and record.after["name"] == "imported"
        assert (record.before is not None) == existed and record.revision == done.revision
        if existed:
            assert record.before["name"] == "c1"


async def test_the_dry_run_import_reports_what_if_in_its_json(tmp_path: Path) -> None:
    """Over REST the dry run's `whatIf` is the `/auth/whatIf` answer, camelCase keys and all."""
    import httpx

    grant = {"constraintId": "reader-checks", "name": "reader checks", "description": "let readers ask",
             "objectType": "api",
             "criteriaOr": [{"field": "route__path", "operator": "equals", "value": "/auth/check"}],
             "groupPermissions": [{"groupId": "basicReadOnly", "permission": "POST",
                                   "permissionType": "allow"}]}  # fmt: skip
    async with open_sdk("remote", tmp_path) as sdk:
        await sdk.create_user_roles("reader", ["basicReadOnly"])
        key = (await sdk.create_api_key(api_key_name="k", user_id="administrator", description="raw calls")).api_key
        async with httpx.AsyncClient(base_url=sdk.settings.api.url, headers={"Authorization": key}) as http:
            dry = await http.post("/auth/constraintsTemplateImport", json={"constraints": [grant], "dryRun": True})
            what_if = await http.post("/auth/whatIf", json={"addConstraints": [grant]})
    assert dry.status_code == 200 and what_if.status_code == 200, (dry.text, what_if.text)
    assert dry.json()["whatIf"] == what_if.json()
    assert {"deniedToAllowed", "allowedToDenied", "changes"} <= set(what_if.json())
    assert "objectType" in what_if.json()["changes"][0]
