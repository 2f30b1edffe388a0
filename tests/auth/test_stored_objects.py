"""Tier 2 decides on the stored object, and an object the caller may not read answers like a missing one.

Every test runs on both backends (in-process, and a remote SDK against a real server) and acts as a user
holding only the roles the test writes.
"""

from __future__ import annotations

from pathlib import Path

from pluginsdk import NotFoundError, PermissionDeniedError, PluginSDK
from tests.auth.conftest import acting_as
from tests.auth.grants import failure, role, rule, same_answer

MISSING_REQ = "req-00000000-0000-0000-0000-000000000000"


async def _requests_by(sdk: PluginSDK, tmp_path: Path) -> dict[str, str]:
    """Requests on templates web and gpu by users bob and carol: (user-template) -> request id."""
    await sdk.create_template(template_id="web", image_id="ami-1", max_number=5)
    await sdk.create_template(template_id="gpu", image_id="ami-2", max_number=5)
    await sdk.create_user_roles("bob", ["admin"])
    await sdk.create_user_roles("carol", ["admin"])
    out: dict[str, str] = {}
    for user in ("bob", "carol"):
        async with acting_as(sdk, user, tmp_path) as u:
            for t in ("web", "gpu"):
                out[f"{user}-{t}"] = (await u.create_request(t, 1, wait=True)).request_id
    return out


async def test_deny_on_user_id_of_a_request_bites_single_operations(sdk: PluginSDK, tmp_path: Path) -> None:
    ids = await _requests_by(sdk, tmp_path)
    await role(sdk, "readers")
    await rule(sdk, "readers", "request", [("requestId", "equals", "*")], ("GET", "POST", "PUT", "DELETE"))
    await rule(sdk, "readers", "request", [("userId", "equals", "bob")], ("GET", "POST", "PUT", "DELETE"), "deny")
    await sdk.create_user_roles("alice", ["readers"])
    async with acting_as(sdk, "alice", tmp_path) as alice:
        hidden = ids["bob-web"]
        missing = await failure(alice.get_request(MISSING_REQ))
        for call in (
            alice.get_request(hidden),
            alice.cancel_request(hidden),
            alice.sync_request(hidden),
            alice.complete_request(hidden),
            alice.update_request_status(hidden, status="failed"),
            alice.populate_machine_ids(hidden),
        ):
            same_answer(await failure(call), missing, hidden, MISSING_REQ)
        assert (await alice.get_request(ids["carol-web"])).request_id == ids["carol-web"]
        listed = {r.request_id for r in (await alice.list_requests()).requests}
        assert listed == {ids["carol-web"], ids["carol-gpu"]}  # the listing agrees with the single reads
        status = await alice.get_request_status([hidden, ids["carol-gpu"]])
        assert status.not_found == [hidden] and [r.request_id for r in status.requests] == [ids["carol-gpu"]]


async def test_allow_on_template_id_opens_the_single_read(sdk: PluginSDK, tmp_path: Path) -> None:
    ids = await _requests_by(sdk, tmp_path)
    await role(sdk, "web-readers")
    await rule(sdk, "web-readers", "request", [("templateId", "equals", "web")])
    await sdk.create_user_roles("alice", ["web-readers"])
    async with acting_as(sdk, "alice", tmp_path) as alice:
        for key in ("bob-web", "carol-web"):
            assert (await alice.get_request(ids[key])).template_id == "web"
        missing = await failure(alice.get_request(MISSING_REQ))
        same_answer(await failure(alice.get_request(ids["bob-gpu"])), missing, ids["bob-gpu"], MISSING_REQ)
        listed = {r.request_id for r in (await alice.list_requests()).requests}
        assert listed == {ids["bob-web"], ids["carol-web"]}


async def test_read_but_not_change_is_403(sdk: PluginSDK, tmp_path: Path) -> None:
    ids = await _requests_by(sdk, tmp_path)
    await role(sdk, "lookers")
    await rule(sdk, "lookers", "request", [("userId", "equals", "carol")])  # GET only
    await sdk.create_user_roles("alice", ["lookers"])
    async with acting_as(sdk, "alice", tmp_path) as alice:
        rid = ids["carol-web"]
        assert (await alice.get_request(rid)).request_id == rid
        for call in (alice.cancel_request(rid), alice.sync_request(rid), alice.complete_request(rid)):
            err = await failure(call)
            assert isinstance(err, PermissionDeniedError) and err.status == 403
        assert isinstance(await failure(alice.cancel_request(ids["bob-web"])), NotFoundError)


async def test_machine_decided_on_its_stored_template(sdk: PluginSDK, tmp_path: Path) -> None:
    ids = await _requests_by(sdk, tmp_path)
    await role(sdk, "no-gpu")
    await rule(sdk, "no-gpu", "machine", [("machineId", "equals", "*")])
    await rule(sdk, "no-gpu", "machine", [("templateId", "equals", "gpu")], ("GET",), "deny")
    await sdk.create_user_roles("alice", ["no-gpu"])
    machines = {m.machine_id: m.template_id for m in (await sdk.list_machines()).machines}
    gpu = next(m for m, t in machines.items() if t == "gpu")
    web = next(m for m, t in machines.items() if t == "web")
    async with acting_as(sdk, "alice", tmp_path) as alice:
        assert (await alice.get_machine(web)).machine_id == web
        assert (await alice.get_machine_health(web)).machine_id == web
        missing = await failure(alice.get_machine("i-missing"))
        same_answer(await failure(alice.get_machine(gpu)), missing, gpu, "i-missing")
        same_answer(await failure(alice.get_machine_health(gpu)), await failure(alice.get_machine_health("i-missing")),
                    gpu, "i-missing")  # fmt: skip
        listed = {m.machine_id for m in (await alice.list_machines()).machines}
        assert listed == {m for m, t in machines.items() if t == "web"}
    assert ids


async def test_template_decided_on_its_stored_provider_api(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_template(template_id="plain", image_id="ami-1", provider_api="aws")
    await sdk.create_template(template_id="fleet", image_id="ami-2", provider_api="EC2Fleet")
    await role(sdk, "tpl")
    await rule(sdk, "tpl", "template", [("templateId", "equals", "*")])
    await rule(sdk, "tpl", "template", [("providerApi", "equals", "EC2Fleet")], ("GET",), "deny")
    await rule(sdk, "tpl", "template", [("providerApi", "equals", "aws")], ("PUT",))
    await sdk.create_user_roles("alice", ["tpl"])
    async with acting_as(sdk, "alice", tmp_path) as alice:
        assert (await alice.get_template("plain")).template.template_id == "plain"
        await alice.update_template("plain", description="still aws")
        err = await failure(alice.update_template("plain", provider_api="EC2Fleet"))  # the result is not allowed
        assert isinstance(err, PermissionDeniedError)
        assert isinstance(await failure(alice.delete_template("plain")), PermissionDeniedError)
        for call, missing_call in (
            (alice.get_template("fleet"), alice.get_template("nope")),
            (alice.update_template("fleet", description="x-x-x"), alice.update_template("nope", description="x-x-x")),
            (alice.delete_template("fleet"), alice.delete_template("nope")),
            (alice.validate_template(template_id="fleet"), alice.validate_template(template_id="nope")),
        ):
            same_answer(await failure(call), await failure(missing_call), "fleet", "nope")
        assert [t.template_id for t in (await alice.list_templates()).templates] == ["plain"]
    assert (await sdk.get_template("fleet")).template.provider_api == "EC2Fleet"  # nothing changed


async def test_allow_on_provider_api_alone_opens_the_single_read(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_template(template_id="fleet", image_id="ami-2", provider_api="EC2Fleet")
    await sdk.create_template(template_id="plain", image_id="ami-1", provider_api="aws")
    await role(sdk, "fleet-readers")
    await rule(sdk, "fleet-readers", "template", [("providerApi", "equals", "EC2Fleet")])
    await sdk.create_user_roles("alice", ["fleet-readers"])
    async with acting_as(sdk, "alice", tmp_path) as alice:
        assert (await alice.get_template("fleet")).template.provider_api == "EC2Fleet"
        assert isinstance(await failure(alice.get_template("plain")), NotFoundError)


async def test_roles_the_caller_may_not_read_answer_like_missing_ones(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_role(role_name="team-a", description="a team role")
    await sdk.create_role(role_name="secret-ops", description="a hidden role")
    await role(sdk, "role-managers", routes="/roles*")
    await rule(sdk, "role-managers", "role", [("roleName", "starts_with", "team-")], ("GET", "PUT", "DELETE", "POST"))
    await sdk.create_user_roles("rman", ["role-managers"])
    async with acting_as(sdk, "rman", tmp_path) as rm:
        await rm.update_role("team-a", description="team a, renamed")
        same_answer(
            await failure(rm.update_role("secret-ops", description="mine now")),
            await failure(rm.update_role("no-such-role", description="mine now")),
            "secret-ops",
            "no-such-role",
        )
        same_answer(await failure(rm.delete_role("secret-ops")), await failure(rm.delete_role("no-such-role")),
                    "secret-ops", "no-such-role")  # fmt: skip
        assert [r.role_name for r in (await rm.list_roles()).message.items] == ["team-a"]
    assert any(r.role_name == "secret-ops" for r in (await sdk.list_roles()).message.items)


async def test_cli_answers_a_hidden_request_like_a_missing_one(tmp_path: Path) -> None:
    """The CLI (in-process engine, `PLUGIN_USER`) gives the same envelope for a hidden and a missing request."""
    import json

    from tests.support.backends import base_config
    from tests.support.cli import clean_environment, invoke

    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        ids = await _requests_by(sdk, tmp_path)
        await role(sdk, "readers")
        await rule(sdk, "readers", "request", [("userId", "equals", "carol")])
        await sdk.create_user_roles("alice", ["readers"])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    env = clean_environment(PLUGIN_USER="alice")

    def show(request_id: str) -> dict[str, object]:
        done = invoke(env, "--config", str(path), "requests", "show", request_id)
        assert done.code == 1, done.out
        return dict(done.json())

    hidden, missing = show(ids["bob-web"]), show(MISSING_REQ)
    assert json.dumps(hidden).replace(ids["bob-web"], "ID") == json.dumps(missing).replace(MISSING_REQ, "ID")


async def test_mcp_answers_a_hidden_template_like_a_missing_one(sdk: PluginSDK, tmp_path: Path) -> None:
    """The MCP tools (over an SDK acting as the caller, either backend) give the same error object."""
    import json

    from tests.mcp.helpers import connect, failure

    await sdk.create_template(template_id="fleet", image_id="ami-2", provider_api="EC2Fleet")
    await role(sdk, "no-fleet")
    await rule(sdk, "no-fleet", "template", [("providerApi", "equals", "aws")])
    await sdk.create_user_roles("alice", ["no-fleet"])
    async with acting_as(sdk, "alice", tmp_path) as alice, connect(alice) as client:
        hidden = await client.call_tool("get_template", {"template_id": "fleet"})
        missing = await client.call_tool("get_template", {"template_id": "nope"})
        assert hidden.is_error and missing.is_error
        assert failure(hidden)["error_code"] == "TEMPLATE_NOT_FOUND"
        assert json.dumps(failure(hidden)).replace("fleet", "ID") == json.dumps(failure(missing)).replace("nope", "ID")


async def test_returning_a_hidden_requests_machines_answers_like_a_missing_request(
    sdk: PluginSDK, tmp_path: Path
) -> None:
    ids = await _requests_by(sdk, tmp_path)
    every = ("GET", "POST", "PUT", "DELETE")
    await role(sdk, "returners")
    await rule(sdk, "returners", "request", [("requestId", "equals", "*")], every)
    await rule(sdk, "returners", "request", [("userId", "equals", "bob")], every, "deny")
    await rule(sdk, "returners", "machine", [("machineId", "equals", "*")], every)
    await sdk.create_user_roles("alice", ["returners"])
    async with acting_as(sdk, "alice", tmp_path) as alice:
        missing = await failure(alice.create_return_request(from_request_id=MISSING_REQ))
        hidden = await failure(alice.create_return_request(from_request_id=ids["bob-web"]))
        same_answer(hidden, missing, ids["bob-web"], MISSING_REQ)
        returned = await alice.create_return_request(from_request_id=ids["carol-web"])
        assert len(returned.processed_machines) == 1 and returned.request_id
    assert not (await sdk.get_request(ids["bob-web"], long=True)).machines[0].return_request_id  # untouched
