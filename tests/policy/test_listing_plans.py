"""Listings filter in the store through the caller's query plan: every page is full and `total_count` counts
exactly what the caller may read — on both backends, for a restricted user and for the administrator."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pluginsdk import PluginSDK
from tests.auth.conftest import acting_as
from tests.auth.grants import role, rule
from tests.auth.test_stored_objects import _requests_by
from tests.support.backends import open_sdk


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
        # templates by id in code-point order on both databases ("W" < "g" < "w"), switched-off ones skipped;
        # roles filtered by the plan
        await admin.create_template(template_id="Web-x", image_id="ami-1")
        await admin.create_template(template_id="web-off", image_id="ami-1", configuration={"active": False})
        await rule(admin, "web-readers", "template", [("templateId", "contains", "eb")])
        await rule(admin, "web-readers", "role", [("roleName", "starts_with", "web")])
        await rule(admin, "web-readers", "api", [("route__path", "equals", "/roles")])
        assert [t.template_id for t in (await admin.list_templates()).templates] == ["Web-x", "gpu", "web"]
        async with PluginSDK(config=any_store, user="alice") as alice:
            page = await alice.list_templates(limit=1, offset=1)
            assert page.total_count == 2 and [t.template_id for t in page.templates] == ["web"]
            every = await alice.list_templates(active_only=False)
            assert [t.template_id for t in every.templates] == ["Web-x", "web", "web-off"]
            assert [r.role_name for r in (await alice.list_roles()).message.items] == ["web-readers"]
        await rule(admin, "web-readers", "api", [("route__path", "equals", "/user-roles")])
        await rule(admin, "web-readers", "userRole", [("roleName", "starts_with", "web")])
        await rule(admin, "web-readers", "userRole", [("roleName", "equals", "admin")], kind="deny")
        await admin.create_user_roles("bob", ["web-readers", "admin"])
        async with PluginSDK(config=any_store, user="alice") as alice:
            shown = (await alice.list_user_roles()).message.items  # per assignment: bob's admin one is denied
            assert [(a.user_id, a.role_name) for a in shown] == [("alice", ["web-readers"]), ("bob", ["web-readers"])]
        # the stores' SQL alone (the listings decide each item again afterwards, which would hide a filter that
        # lets too much through)
        engine = admin.backend.engine  # type: ignore[attr-defined]
        plan = await admin.plan_access("userRole", "GET", user_id="alice")
        rows = await engine.auth.store.user_role_rows(access=plan)
        assert [(r["user_id"], r["role_name"]) for r in rows] == [("alice", "web-readers"), ("bob", "web-readers")]
        plan = await admin.plan_access("role", "GET", user_id="alice")
        assert [r["role_name"] for r in await engine.auth.store.list_roles(plan)] == ["web-readers"]
        plan = await admin.plan_access("template", "GET", user_id="alice")
        page, total = await engine.store.page_templates(access=plan, limit=1, offset=1)
        assert total == 3 and [t.template_id for t in page] == ["web"]


def _files(directory: Path, templates: list[dict[str, Any]]) -> None:
    directory.mkdir()
    (directory / "templates.json").write_text(json.dumps({"templates": templates}))


async def _walk_templates(sdk: PluginSDK, limit: int, **filters: Any) -> tuple[list[str], set[int]]:
    """Every page of a template listing: the ids in order, and the totals the pages gave (each page full but
    the last)."""
    ids: list[str] = []
    totals: set[int] = set()
    while True:
        page = await sdk.list_templates(limit=limit, offset=len(ids), **filters)
        totals.add(page.total_count)
        ids += [t.template_id for t in page.templates]
        if len(page.templates) < limit:
            assert len(ids) == page.total_count
            return ids, totals


async def test_template_pages_merge_store_and_files_exactly(backend_kind: str, tmp_path: Path) -> None:
    """Stored templates (even numbers, one switched off, one unreadable) and file templates (odd numbers, one the
    store hides, one unreadable) page as one list by id: full pages, exact totals, each id once, nothing
    unreadable; the administrator's listing is every template, as it always was."""
    files = [{"template_id": f"t-{i:02d}", "image_id": "ami-f", "provider_api": "local"} for i in range(1, 30, 2)]
    files += [
        {"template_id": "t-04", "image_id": "ami-hidden", "provider_api": "local"},  # the stored t-04 wins
        {"template_id": "secret-f", "image_id": "ami-f", "provider_api": "local"},
        {"template_id": "t-31", "image_id": "ami-f", "provider_api": "local", "configuration": {"active": False}},
    ]
    config = {"dir": str(tmp_path / "templates")}
    async with open_sdk(backend_kind, tmp_path, templates=config) as sdk:
        for i in range(0, 30, 2):
            await sdk.create_template(template_id=f"t-{i:02d}", image_id="ami-s", provider_api="local")
        await sdk.create_template(template_id="secret-s", image_id="ami-s", provider_api="local")
        await sdk.create_template(
            template_id="t-30", image_id="ami-s", provider_api="local", configuration={"active": False}
        )
        _files(tmp_path / "templates", files)  # after the store's: a create may not take a file's id
        await sdk.refresh_templates(force=True)
        await role(sdk, "t-readers")
        await rule(sdk, "t-readers", "template", [("templateId", "starts_with", "t-")])
        await rule(sdk, "t-readers", "template", [("templateId", "ends_with", "5")], kind="deny")
        await sdk.create_user_roles("alice", ["t-readers"])

        everything = sorted({f"t-{i:02d}" for i in range(32)} | {"secret-s", "secret-f"})
        for limit in (1, 4, 7, 50):
            assert await _walk_templates(sdk, limit, active_only=False) == (everything, {len(everything)})
        active = [t for t in everything if t not in ("t-30", "t-31")]
        assert await _walk_templates(sdk, 5) == (active, {len(active)})  # switched-off ones skipped by default
        assert (await sdk.get_template("t-04")).template.image_id == "ami-s"

        readable = [t for t in everything if t.startswith("t-") and not t.endswith("5")]
        async with acting_as(sdk, "alice", tmp_path, templates=config) as alice:
            for limit in (1, 3, 4, 50):
                assert await _walk_templates(alice, limit, active_only=False) == (readable, {len(readable)})
            assert await _walk_templates(alice, 4) == (
                [t for t in readable if t in active],
                {len(readable) - 2},
            )
            for client, want in ((alice, readable), (sdk, everything)):  # every window, as a page
                for limit in (1, 2, 3, 5, 8):
                    for offset in range(len(want) + 2):
                        page = await client.list_templates(limit=limit, offset=offset, active_only=False)
                        assert [t.template_id for t in page.templates] == want[offset : offset + limit]
                        assert page.total_count == len(want)
            page = await alice.list_templates(limit=3, offset=3, active_only=False)
            assert [t.template_id for t in page.templates] == ["t-03", "t-04", "t-06"]
            assert page.templates[1].image_id == "ami-s"
            assert (await alice.list_templates(limit=5, offset=len(readable), active_only=False)).templates == []


async def test_role_listing_is_what_the_caller_may_read(sdk: PluginSDK, tmp_path: Path) -> None:
    for name in ("team-a", "team-b", "other"):
        await sdk.create_role(role_name=name, description=f"role {name}")
    await role(sdk, "role-readers", routes="/roles")
    await rule(sdk, "role-readers", "role", [("roleName", "starts_with", "team-")])
    await rule(sdk, "role-readers", "role", [("roleName", "equals", "team-b")], kind="deny")
    await sdk.create_user_roles("alice", ["role-readers"])
    every = [r.role_name for r in (await sdk.list_roles()).message.items]
    assert {"team-a", "team-b", "other", "role-readers", "admin"} <= set(every) and every == sorted(every)
    # user-role assignments are decided one by one, on `userId` and `roleName`
    await rule(sdk, "role-readers", "api", [("route__path", "equals", "/user-roles")])
    await rule(sdk, "role-readers", "userRole", [("roleName", "equals", "team-a")])
    await rule(sdk, "role-readers", "userRole", [("userId", "equals", "carol")], kind="deny")
    for user, names in {"bob": ["team-a"], "carol": ["team-b", "team-a"], "dave": ["other"]}.items():
        await sdk.create_user_roles(user, names)
    assigned = {a.user_id for a in (await sdk.list_user_roles()).message.items}
    assert {"alice", "bob", "carol", "dave"} <= assigned
    async with acting_as(sdk, "alice", tmp_path) as alice:
        assert [r.role_name for r in (await alice.list_roles()).message.items] == ["team-a"]
        shown = (await alice.list_user_roles()).message.items  # carol's team-a one: denied on her userId
        assert [(a.user_id, a.role_name) for a in shown] == [("bob", ["team-a"])]


async def test_constraint_and_key_pages_walk_the_whole_set_for_a_caller_with_the_route(
    sdk: PluginSDK, tmp_path: Path
) -> None:
    """Constraints and API keys have no object type of their own: a caller the route is granted reads them all,
    page by page, exactly as the administrator does."""
    await role(sdk, "auditor", routes=None)
    await rule(sdk, "auditor", "api", [("route__path", "is_one_of", "/auth/constraints,/auth/api-keys")])
    await sdk.create_user_roles("alice", ["auditor"])
    for i in range(3):
        await sdk.create_api_key(api_key_name=f"k{i}", user_id="administrator", description="a key to list")

    async def constraints(client: PluginSDK) -> list[str]:
        ids: list[str] = []
        token = None
        while True:
            page = await client.list_constraints(page_size=2, starting_token=token)
            assert len(page.message.items) == 2 or page.message.next_token is None  # full but the last
            ids += [c.constraint_id for c in page.message.items]
            token = page.message.next_token
            if token is None:
                return ids

    async def keys(client: PluginSDK) -> list[str]:
        ids: list[str] = []
        token = None
        while True:
            page = await client.list_api_keys(page_size=2, starting_token=token)
            assert len(page.items) == 2 or page.next_token is None
            ids += [k.api_key_id for k in page.items]
            token = page.next_token
            if token is None:
                return ids

    async with acting_as(sdk, "alice", tmp_path) as alice:
        want_constraints, want_keys = await constraints(sdk), await keys(sdk)
        assert len(want_constraints) == len(set(want_constraints)) > 2 and len(set(want_keys)) >= 3
        assert await constraints(alice) == want_constraints
        assert await keys(alice) == want_keys


async def test_templates_stored_before_the_active_column_are_read_when_the_store_opens(tmp_path: Path) -> None:
    async with open_sdk("local", tmp_path) as sdk:
        for t in ("on", "off", "odd"):
            await sdk.create_template(template_id=t, image_id="ami-1", configuration={"active": t != "off"})
    with sqlite3.connect(tmp_path / "store.db") as db:  # as rows written before migration 11 are
        db.execute("UPDATE templates SET active = NULL")
        db.execute("UPDATE templates SET data = '{not json' WHERE template_id = 'odd'")
    async with open_sdk("local", tmp_path) as sdk:
        assert [t.template_id for t in (await sdk.list_templates()).templates] == ["on"]  # `odd` does not parse
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert dict(db.execute("SELECT template_id, active FROM templates")) == {"on": 1, "off": 0, "odd": 1}
