"""Property: the user-role listing shows exactly the assignments the per-assignment check allows — each
(user, role) pair decided on `userId` and `roleName`, as `POST /auth/check`, the query plan and the writes
(`DELETE /user-roles`) decide one — in-process and over REST.

One store and one server for the whole test; each example overwrites random allow/deny constraints on
`userRole` for the probing user's role, lists as that user through both interfaces, and compares with
`check_access` asked about every stored assignment and with the plain `ReferencePolicy`.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pluginsdk import PluginSDK
from pluginsdk.principal import Principal
from tests.support.backends import base_config
from tests.support.reference_policy import ReferencePolicy
from tests.support.remote import running_server

OPERATORS = ("equals", "contains", "does_not_contain", "starts_with", "ends_with", "is_one_of", "is_not_one_of")
METHODS = ("GET", "POST", "PUT", "DELETE")
ASSIGNMENTS = {"u-ann": ["team-a", "team-b"], "u-ben": ["team-b", "other"], "u-cat": ["other"]}
SLOTS = 4
PROBER = Principal(user_id="prober", roles=("probe",))
ROUTES = {
    "constraintId": "probe-routes", "name": "probe routes", "description": "every route for the probe role",
    "objectType": "api", "criteriaOr": [{"field": "route__path", "operator": "equals", "value": "*"}],
    "groupPermissions": [{"groupId": "probe", "permission": m, "permissionType": "allow"} for m in METHODS],
}  # fmt: skip


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.config = base_config(tmp_path)
        self.stack = AsyncExitStack()

    async def start(self, url: str) -> None:
        self.admin = await self.stack.enter_async_context(PluginSDK(config=self.config))
        for name in ("team-a", "team-b", "other", "probe"):
            await self.admin.create_role(role_name=name, description=f"role {name}")
        for user, names in {**ASSIGNMENTS, "prober": ["probe"]}.items():
            await self.admin.create_user_roles(user, names)
        await self.admin.import_constraints_template(constraints=[ROUTES], overwrite=True)
        key = await self.admin.create_api_key(api_key_name="prober", user_id="prober", description="property test")
        self.local = await self.stack.enter_async_context(PluginSDK(config=self.config, user="prober"))
        self.remote = await self.stack.enter_async_context(
            PluginSDK(backend="remote", api_url=url, api_key=key.api_key, config=self.config)
        )
        every = (await self.admin.list_user_roles()).message.items  # the administrator's own one too
        self.pairs = sorted((a.user_id, r) for a in every for r in a.role_name)
        assert len(self.pairs) == 7


def test_user_role_listings_equal_the_per_assignment_checks(tmp_path: Path) -> None:
    world = World(tmp_path)
    loop = asyncio.new_event_loop()
    with running_server(world.config) as url:
        try:
            loop.run_until_complete(world.start(url))
            _explore(world, loop)
        finally:
            loop.run_until_complete(world.stack.aclose())
            loop.close()


def _explore(world: World, loop: asyncio.AbstractEventLoop) -> None:
    values = {"userId": [*ASSIGNMENTS, "prober", "u-*", "*n", "nobody"],
              "roleName": ["team-a", "team-b", "other", "probe", "team-*", "*b", "t", "nothing"]}  # fmt: skip

    @st.composite
    def criterion(draw: st.DrawFn) -> dict[str, str]:
        field = draw(st.sampled_from(("userId", "roleName")))
        operator = draw(st.sampled_from(OPERATORS))
        pool = st.sampled_from(values[field])
        value = draw(pool) if "one_of" not in operator else ",".join(draw(st.lists(pool, min_size=1, max_size=2)))
        return {"field": field, "operator": operator, "value": value}

    @st.composite
    def constraint(draw: st.DrawFn, slot: int) -> dict[str, Any]:
        kind = draw(st.sampled_from(("allow", "allow", "deny")))
        return {
            "constraintId": f"p-{slot}", "name": f"p-{slot}", "description": f"property rule {slot}",
            "objectType": "userRole", "criteriaAnd": draw(st.lists(criterion(), min_size=1, max_size=2)),
            "groupPermissions": [{"groupId": "probe", "permission": "GET", "permissionType": kind}],
        }  # fmt: skip

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(rules=st.tuples(*(constraint(i) for i in range(SLOTS))))
    def check(rules: tuple[dict[str, Any], ...]) -> None:
        loop.run_until_complete(_one_example(world, list(rules)))

    check()


async def _one_example(world: World, rules: list[dict[str, Any]]) -> None:
    await world.admin.import_constraints_template(constraints=rules, overwrite=True)
    ref = ReferencePolicy([*rules, ROUTES], {"probe": False})
    checked: set[tuple[str, str]] = set()
    for user, role in world.pairs:
        attrs = {"userId": user, "roleName": role}
        answer = await world.admin.check_access("userRole", "GET", user_id="prober", attributes=attrs)
        assert answer.allowed is ref.is_allowed(PROBER, "userRole", attrs, "GET"), (attrs, rules)
        if answer.allowed:
            checked.add((user, role))
    for where, sdk in (("in-process", world.local), ("REST", world.remote)):
        listed = {(a.user_id, r) for a in (await sdk.list_user_roles()).message.items for r in a.role_name}
        assert listed == checked, (where, rules)
