"""A write to an object the caller may not read answers exactly like a write to a missing one (both backends).

The caller's constraints allow every change (PUT, POST, DELETE) on templates, requests and roles but deny
reading the ones named `secret-*`: each change of such an object must answer the very envelope a missing id
gets (ids aside) and leave the object as it was. Over REST the bodies are compared byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from pluginsdk import PluginSDK, SDKError
from tests.auth.conftest import acting_as
from tests.auth.grants import failure, role, rule

WRITES = ("PUT", "POST", "DELETE")


async def _writer(sdk: PluginSDK) -> None:
    """`writer` may change any template, request and role, and read only those not named `secret-*`."""
    await role(sdk, "writers", routes="*")
    kinds = (("template", "templateId"), ("request", "templateId"), ("machine", "templateId"), ("role", "roleName"))
    for object_type, field in kinds:
        await rule(sdk, "writers", object_type, [(field, "equals", "*")], ("GET", *WRITES))
        await rule(sdk, "writers", object_type, [(field, "starts_with", "secret-")], ("GET",), "deny")
    await sdk.create_user_roles("writer", ["writers"])


def _envelope(err: SDKError, ident: str) -> str:
    return json.dumps([err.status, err.to_envelope()], sort_keys=True).replace(ident, "ID")


async def _same(hidden: Any, missing: Any, hidden_id: str, missing_id: str) -> None:
    h, m = await failure(hidden), await failure(missing)
    assert m.status == 404
    assert _envelope(h, hidden_id) == _envelope(m, missing_id)


async def test_changing_what_the_caller_may_not_read_answers_like_a_missing_object(
    sdk: PluginSDK, tmp_path: Path
) -> None:
    await sdk.create_template(template_id="secret-t", image_id="ami-1", description="kept")
    await sdk.create_template(template_id="open-t", image_id="ami-1")
    await sdk.create_role(role_name="secret-r", description="kept")
    await sdk.create_user_roles("owner", ["admin"])
    async with acting_as(sdk, "owner", tmp_path) as owner:
        made = await owner.create_request("secret-t", 1, wait=True)
    rid, machine = made.request_id, made.machines[0].machine_id
    missing_req = "req-00000000-0000-0000-0000-000000000000"
    await _writer(sdk)
    async with acting_as(sdk, "writer", tmp_path) as w:
        await _same(w.update_template("secret-t", description="mine"), w.update_template("nope-t", description="mine"),
                    "secret-t", "nope-t")  # fmt: skip
        await _same(w.delete_template("secret-t"), w.delete_template("nope-t"), "secret-t", "nope-t")
        await _same(w.update_role("secret-r", description="mine now"),
                    w.update_role("nope-r", description="mine now"), "secret-r", "nope-r")  # fmt: skip
        await _same(w.delete_role("secret-r"), w.delete_role("nope-r"), "secret-r", "nope-r")
        for call in ("cancel_request", "sync_request", "complete_request"):
            await _same(getattr(w, call)(rid), getattr(w, call)(missing_req), rid, missing_req)
        returned = await w.create_return_request(machine_ids=[machine, "i-nope"])
        assert returned.request_id is None
        assert [(m.machine_id, m.reason) for m in returned.skipped_machines] == [
            (machine, "not found"),
            ("i-nope", "not found"),
        ]
        await w.update_template("open-t", description="readable, so changed")  # the grant itself works
    assert (await sdk.get_template("secret-t")).template.description == "kept"
    assert (await sdk.get_template("open-t")).template.description == "readable, so changed"
    assert any(r.role_name == "secret-r" and r.description == "kept" for r in (await sdk.list_roles()).message.items)
    assert (await sdk.get_request(rid)).status != "cancelled"
    assert (await sdk.get_machine(machine)).status == "running"


async def test_rest_bodies_for_a_hidden_and_a_missing_template_are_identical(tmp_path: Path) -> None:
    """Over the wire: status, headers that describe the body, and the body bytes (ids aside)."""
    from tests.support.backends import open_sdk

    async with open_sdk("remote", tmp_path) as sdk:
        await sdk.create_template(template_id="secret-t", image_id="ami-1")
        await _writer(sdk)
        key = (await sdk.create_api_key(api_key_name="writer", user_id="writer", description="hidden writes")).api_key
        async with httpx.AsyncClient(base_url=sdk.settings.api.url, headers={"Authorization": key}) as http:
            for method, body in (("PUT", {"description": "mine"}), ("DELETE", None), ("GET", None)):
                answers = []
                for ident in ("secret-t", "nope-t"):
                    r = await http.request(method, f"/api/v1/templates/{ident}", json=body)
                    answers.append((r.status_code, r.headers["content-type"], r.content.replace(ident.encode(), b"ID")))
                assert answers[0] == answers[1] and answers[0][0] == 404, (method, answers)
        assert (await sdk.get_template("secret-t")).template.template_id == "secret-t"


async def test_cleanups_neither_touch_nor_name_what_the_caller_may_not_read(sdk: PluginSDK, tmp_path: Path) -> None:
    from tests.test_requests import settle

    finished: dict[str, tuple[str, str, str]] = {}  # template -> (request, return request, machine)
    for template in ("secret-t", "open-t"):
        await sdk.create_template(template_id=template, image_id="ami-1")
        made = await sdk.create_request(template, 1, wait=True)
        machine = made.machines[0].machine_id
        returned = await sdk.create_return_request([machine])
        await settle(sdk, returned.request_id or "")
        await settle(sdk, made.request_id)
        finished[template] = (made.request_id, returned.request_id or "", machine)
    await _writer(sdk)
    async with acting_as(sdk, "writer", tmp_path) as w:
        dry = await w.cleanup_old_requests(older_than_days=0, dry_run=True)
        assert finished["secret-t"][0] not in dry.request_ids_found
        assert finished["open-t"][0] in dry.request_ids_found
        assert (await w.cleanup_terminated_machines(older_than_days=0)).machines_cleaned == 1
    assert (await sdk.get_machine(finished["secret-t"][2])).machine_id == finished["secret-t"][2]
    assert isinstance(await failure(sdk.get_machine(finished["open-t"][2])), SDKError)
