"""Idempotent replays leak nothing (both backends): another principal's request id answers one 409 that says
nothing about that request, whatever parameters are sent; the owner's replay still answers the first result."""

from __future__ import annotations

import uuid
from pathlib import Path

from pluginsdk import PluginSDK, SDKError, StateConflictError
from tests.auth.conftest import acting_as
from tests.auth.grants import failure, role, rule


async def _own_requests(sdk: PluginSDK, user: str) -> None:
    await role(sdk, f"{user}-req", methods=("GET", "POST"))
    await rule(sdk, f"{user}-req", "request", [("userId", "equals", user)], ("GET", "POST"))
    await rule(sdk, f"{user}-req", "machine", [("machineId", "equals", "*")], ("GET", "POST"))
    await sdk.create_user_roles(user, [f"{user}-req"])


def _silent(err: SDKError, request_id: str) -> None:
    assert isinstance(err, StateConflictError) and err.status == 409
    assert request_id in err.message
    for leak in ("web", "completed", "running", "pending", "machine", "i-", "bob"):
        assert leak not in err.message.replace(request_id, "") and leak not in str(err.details).replace(request_id, "")


async def test_another_users_request_id_reveals_nothing(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1", max_number=5)
    await _own_requests(sdk, "bob")
    await _own_requests(sdk, "amy")
    rid = f"req-{uuid.uuid4()}"
    async with acting_as(sdk, "bob", tmp_path) as bob:
        first = await bob.create_request("web", 1, request_id=rid, wait=True)
        again = await bob.create_request("web", 1, request_id=rid)  # the owner's replay: the first answer
        assert again.request_id == rid and again.status == first.status
        machine = first.machines[0].machine_id
        ret = f"ret-{uuid.uuid4()}"
        await bob.create_return_request(machine_ids=[machine], request_id=ret, force_return=True)
    async with acting_as(sdk, "amy", tmp_path) as amy:
        same = await failure(amy.create_request("web", 1, request_id=rid))
        other = await failure(amy.create_request("web", 2, request_id=rid))
        _silent(same, rid)
        assert (same.message, same.details) == (other.message, other.details)  # parameters make no difference
        _silent(await failure(amy.create_return_request(machine_ids=["i-nothing"], request_id=ret)), ret)
