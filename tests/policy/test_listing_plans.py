"""Listings filter in the store through the caller's query plan: every page is full and `total_count` counts
exactly what the caller may read — on both backends, for a restricted user and for the administrator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pluginsdk import PluginSDK
from tests.auth.conftest import acting_as
from tests.auth.grants import role, rule
from tests.auth.test_stored_objects import _requests_by


async def test_request_pages_are_full_and_totals_exact(sdk: PluginSDK, tmp_path: Path) -> None:
    ids = await _requests_by(sdk, tmp_path)  # bob and carol, each on templates web and gpu
    await role(sdk, "web-readers")
    await rule(sdk, "web-readers", "request", [("templateId", "equals", "web")])
    await rule(sdk, "web-readers", "request", [("userId", "equals", "bob")], kind="deny")
    await sdk.create_user_roles("alice", ["web-readers"])
    everything = await sdk.list_requests()
    assert everything.total_count == 4 and len(everything.requests) == 4  # the administrator: unchanged
    async with acting_as(sdk, "alice", tmp_path) as alice:
        page = await alice.list_requests(limit=1)
        assert [r.request_id for r in page.requests] == [ids["carol-web"]] and page.total_count == 1
        assert (await alice.list_requests(limit=1, offset=1)).requests == []
        plan = await sdk.plan_access("request", "GET", user_id="alice")
        for r in everything.requests:
            allowed = await sdk.check_access(
                "request",
                "GET",
                user_id="alice",
                attributes={"requestId": r.request_id, "templateId": r.template_id, "userId": r.created_by},
            )
            assert allowed.allowed is (r.request_id == ids["carol-web"]), plan
        active = await alice.list_active_requests(all_resources=True, limit=1)
        assert active.total_count == 1 and len(active.requests) == 1


async def test_machine_pages_are_full_and_totals_exact(sdk: PluginSDK, tmp_path: Path) -> None:
    await _requests_by(sdk, tmp_path)  # one machine per request: web and gpu, by bob and carol
    await role(sdk, "gpu-readers")
    await rule(sdk, "gpu-readers", "machine", [("templateId", "equals", "gpu")])
    await sdk.create_user_roles("alice", ["gpu-readers"])
    everything = await sdk.list_machines()
    assert everything.total_count == 4 and len(everything.machines) == 4
    async with acting_as(sdk, "alice", tmp_path) as alice:
        first, second = await alice.list_machines(limit=1), await alice.list_machines(limit=1, offset=1)
        assert first.total_count == second.total_count == 2
        assert [m.template_id for m in (*first.machines, *second.machines)] == ["gpu", "gpu"]


def test_a_plan_too_large_for_one_statement_is_left_to_the_decisions() -> None:
    from backends.local.policy import CompiledPolicy
    from backends.local.policy.plans import plan_access
    from backends.local.store.access import MAX_PLAN_PARAMETERS, plan_where
    from pluginsdk.principal import Principal

    values = ",".join(f"t{i}" for i in range(MAX_PLAN_PARAMETERS + 1))
    grant = {"groupId": "many", "permission": "GET", "permissionType": "allow"}
    policy = CompiledPolicy(
        [
            {
                "objectType": "request",
                "criteriaAnd": [{"field": "templateId", "operator": "is_one_of", "value": values}],
                "groupPermissions": [grant],
            }
        ]
    )
    plan = plan_access(policy, Principal(user_id="u", roles=("many",)), "request", "GET", 1)
    assert plan.kind == "conditional" and plan_where(plan, "request", "sqlite") == (None, {})


async def test_listing_plans_on_each_store(any_store: dict[str, Any]) -> None:
    """The plan's SQL as the store runs it: SQLite, then PostgreSQL (skipped where none answers)."""
    async with PluginSDK(config=any_store) as admin:
        for t in ("web", "gpu"):
            await admin.create_template(template_id=t, image_id="ami-1", max_number=5)
        made = [(await admin.create_request(t, 1, wait=True)).request_id for t in ("web", "gpu", "web", "gpu", "web")]
        await role(admin, "web-readers")
        await rule(admin, "web-readers", "request", [("templateId", "starts_with", "we")])
        await rule(admin, "web-readers", "machine", [("templateId", "equals", "web")])
        await admin.create_user_roles("alice", ["web-readers"])
        async with PluginSDK(config=any_store, user="alice") as alice:
            page = await alice.list_requests(limit=2)
            assert page.total_count == 3 and [r.request_id for r in page.requests] == [made[4], made[2]]
            machines = await alice.list_machines(limit=2, offset=2)
            assert machines.total_count == 3 and [m.template_id for m in machines.machines] == ["web"]
