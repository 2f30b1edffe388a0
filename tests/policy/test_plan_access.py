"""`plan_access` on both backends: always / never / a condition tree that agrees with `check_access`, its revision,
`at_least_revision`, and the route it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import PermissionDeniedError, PluginSDK
from pluginsdk.models import PlanCondition
from pluginsdk.plans import predicate
from tests.auth.conftest import acting_as
from tests.policy.test_decision_point import _setup


async def test_plan_states_the_decision(sdk: PluginSDK) -> None:
    await _setup(sdk)
    plan = await sdk.plan_access("asset", "PUT", user_id="alice")
    assert plan.kind == "conditional" and plan.revision > 0
    assert plan.condition == PlanCondition(
        op="and",
        operands=[
            PlanCondition(op="match", field="databaseId", operator="starts_with", value="proj-*"),
            PlanCondition(
                op="not",
                operands=[PlanCondition(op="match", field="databaseId", operator="starts_with", value="proj-secret")],
            ),
        ],
    )
    allowed = predicate(plan)
    for database_id in ("proj-1", "proj-secret", "other", None):
        attributes = {} if database_id is None else {"databaseId": database_id}
        decision = await sdk.check_access("asset", "PUT", user_id="alice", attributes=attributes)
        assert allowed(attributes) is decision.allowed
    assert (await sdk.plan_access("asset", "DELETE", user_id="bob")).kind == "never"  # an MFA role, no MFA
    assert (await sdk.plan_access("asset", "DELETE", user_id="bob", mfa=True)).kind == "conditional"
    assert (await sdk.plan_access("asset", "GET", user_id="mallory")).kind == "never"
    again = await sdk.plan_access("asset", "GET", roles=["editor"], at_least_revision=plan.revision)
    assert again.revision == plan.revision and again.condition is not None


async def test_plan_needs_its_route(sdk: PluginSDK, tmp_path: Path) -> None:
    await _setup(sdk)
    async with acting_as(sdk, "alice", tmp_path) as alice:
        with pytest.raises(PermissionDeniedError):
            await alice.plan_access("asset", "GET", user_id="alice")
