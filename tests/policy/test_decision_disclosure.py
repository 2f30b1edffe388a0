"""A decision route answers no more than its caller may read (docs/policy.md, "What each decision route
reveals"): a key granted only the check routes gets no explanation through `explain` (403, as `/auth/explain`
answers it) and no roles in its answers; granted the explain and role-listing routes as well, it gets both."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import PermissionDeniedError, PluginSDK
from tests.auth.conftest import acting_as
from tests.policy.test_decision_point import _setup, perm

_ASSET = {"databaseId": "proj-1"}
_QUESTION = {"userId": "alice", "objectType": "asset", "method": "PUT", "attributes": _ASSET}


async def _grant_routes(sdk: PluginSDK, cid: str, method: str, *paths: str) -> None:
    await sdk.create_constraint(
        cid,
        name=cid,
        description="routes for the service",
        object_type="api",
        criteria_or=[{"field": "route__path", "operator": "equals", "value": p} for p in paths],
        group_permissions=[perm("pdp-client", method)],
    )


async def test_a_check_only_key_gets_decisions_alone(sdk: PluginSDK, tmp_path: Path) -> None:
    await _setup(sdk)
    await sdk.create_role(role_name="pdp-client", description="a service asking for its users")
    await _grant_routes(sdk, "pdp-checks", "POST", "/auth/check", "/auth/check/batch")
    await sdk.create_user_roles("svc", ["pdp-client"])
    async with acting_as(sdk, "svc", tmp_path) as svc:
        with pytest.raises(PermissionDeniedError):
            await svc.explain_access("asset", "PUT", user_id="alice", attributes=_ASSET)
        with pytest.raises(PermissionDeniedError, match="/auth/explain"):
            await svc.check_access("asset", "PUT", user_id="alice", attributes=_ASSET, explain=True)
        with pytest.raises(PermissionDeniedError, match="/auth/explain"):
            await svc.check_access_batch([_QUESTION], explain=True)
        with pytest.raises(PermissionDeniedError):
            await svc.list_user_roles()
        single = await svc.check_access("asset", "PUT", user_id="alice", attributes=_ASSET)
        assert single.allowed and single.roles is None and "roles" not in single.to_dict(by_alias=True)
        by_roles = await svc.check_access("asset", "PUT", roles=["editor", "ghost"], attributes=_ASSET)
        assert by_roles.allowed and by_roles.roles is None  # which of the names exist is not told
        batch = await svc.check_access_batch([_QUESTION, {**_QUESTION, "userId": "bob"}])
        assert [d.allowed for d in batch.decisions] == [True, True]
        assert all(d.roles is None for d in batch.decisions)
        assert all("roles" not in d for d in batch.model_dump(by_alias=True)["decisions"])

    # granted the explain route and the role listings too, the same key gets the explanation and the roles
    await _grant_routes(sdk, "pdp-explain", "POST", "/auth/explain")
    await _grant_routes(sdk, "pdp-role-reads", "GET", "/roles", "/user-roles")
    async with acting_as(sdk, "svc", tmp_path) as svc:
        single = await svc.check_access("asset", "PUT", user_id="alice", attributes=_ASSET, explain=True)
        assert single.roles == ["editor"] and single.explanation is not None
        assert [r.constraint_id for r in single.explanation.allowed_by] == ["edit-proj"]
        batch = await svc.check_access_batch([_QUESTION], explain=True)
        assert batch.decisions[0].roles == ("editor",) and batch.decisions[0].explanation is not None


async def test_reading_one_listing_is_not_enough(sdk: PluginSDK, tmp_path: Path) -> None:
    await _setup(sdk)
    await sdk.create_role(role_name="pdp-client", description="a service asking for its users")
    await _grant_routes(sdk, "pdp-checks", "POST", "/auth/check")
    await _grant_routes(sdk, "pdp-roles", "GET", "/roles")
    await sdk.create_user_roles("svc", ["pdp-client"])
    async with acting_as(sdk, "svc", tmp_path) as svc:
        assert (await svc.check_access("asset", "PUT", user_id="alice", attributes=_ASSET)).roles is None
