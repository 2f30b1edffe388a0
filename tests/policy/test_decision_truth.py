"""A decision result is its decision: `bool()` is `allowed`, and `str()`/`repr()` show `allowed=False`, on both
backends — `if await sdk.is_allowed(...)` must never allow what was denied."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import PluginSDK
from tests.auth.conftest import acting_as
from tests.policy.test_decision_point import _setup


def _shows(result: object, allowed: bool) -> None:
    assert bool(result) is allowed
    assert f"allowed={allowed}" in str(result) and f"allowed={allowed}" in repr(result)


async def test_every_decision_result_is_its_decision(sdk: PluginSDK) -> None:
    await _setup(sdk)
    denied = {"databaseId": "proj-secret"}
    _shows(await sdk.is_allowed("asset", {"databaseId": "x"}, "DELETE"), True)  # the administrator
    _shows(await sdk.check_access("asset", "PUT", user_id="alice", attributes=denied), False)
    _shows(await sdk.check_access("asset", "PUT", user_id="alice", attributes={"databaseId": "proj-1"}), True)
    explained = await sdk.check_access("asset", "PUT", user_id="alice", attributes=denied, explain=True)
    assert not explained and explained.explanation is not None
    _shows(explained.explanation, False)
    _shows(await sdk.explain_access("asset", "PUT", user_id="alice", attributes=denied), False)
    batch = await sdk.check_access_batch(
        [
            {"userId": "alice", "objectType": "asset", "method": "PUT", "attributes": denied},
            {"userId": "alice", "objectType": "asset", "method": "GET", "attributes": denied},
        ]
    )
    _shows(batch.decisions[0], False)
    _shows(batch.decisions[1], True)
    with pytest.raises(TypeError, match="many decisions"):
        bool(batch)
    with pytest.raises(TypeError, match="many decisions"):
        bool(await sdk.filter_allowed("asset", [denied], "GET"))


async def test_a_denied_callers_is_allowed_is_false(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    async with acting_as(sdk, "reader", tmp_path) as reader:
        decision = await reader.is_allowed("asset", {"databaseId": "db1"}, "DELETE")
        assert not decision and "allowed=False" in str(decision)
