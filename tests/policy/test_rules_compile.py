"""What is compiled (constraints, roles) is separate from what is resolved per subject (user-role
assignments): a user-role write compiles nothing — neither its lock-out check nor the next decision — and
still bites on the next call, on both backends; a role or constraint write still recompiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import PluginSDK, observe
from pluginsdk.errors import PermissionDeniedError
from tests.auth.conftest import acting_as

_ROUTE = {"route__path": "/roles"}


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every policy compile in this process (the local engine's, or the test server's running in a thread), seen
    through the metrics hook."""
    seen: list[float] = []
    monkeypatch.setattr(observe, "policy_compile", seen.append)
    return seen


async def test_user_role_writes_compile_nothing_and_bite_on_the_next_check(
    sdk: PluginSDK, compiles: list[float]
) -> None:
    first = await sdk.check_access("api", "GET", user_id="user-one", attributes=_ROUTE)
    assert not first.allowed
    before = len(compiles)
    written = await sdk.create_user_roles("user-one", ["admin"])
    got = await sdk.check_access("api", "GET", user_id="user-one", attributes=_ROUTE)
    assert got.allowed and got.roles == ["admin"]
    assert written.revision is not None and got.revision == written.revision > first.revision
    written = await sdk.update_user_roles("user-one", ["basicReadOnly"])
    got = await sdk.check_access("api", "GET", user_id="user-one", attributes=_ROUTE, explain=True)
    assert not got.allowed and got.roles == ["basicReadOnly"] and got.revision == written.revision
    assert got.explanation is not None and got.explanation.roles == ["basicReadOnly"]
    who = await sdk.who_can("api", "GET", attributes=_ROUTE)
    assert "user-one" not in who.allowed_users
    await sdk.delete_user_roles("user-one")
    got = await sdk.check_access("api", "GET", user_id="user-one", attributes=_ROUTE)
    assert not got.allowed and got.roles == []
    assert len(compiles) == before  # three assignment writes and their decisions: no compile
    role = await sdk.create_role(role_name="auditors", description="a rules change")
    got = await sdk.check_access("api", "GET", roles=["auditors"], attributes=_ROUTE)
    assert got.roles == ["auditors"] and got.revision == role.revision
    assert len(compiles) == before + 1  # a role write recompiles, once (lock-out check and decision share it)


async def test_a_user_role_write_bites_on_the_next_authorized_call_without_a_compile(
    sdk: PluginSDK, tmp_path: Path, compiles: list[float]
) -> None:
    async with acting_as(sdk, "late", tmp_path) as late:
        with pytest.raises(PermissionDeniedError):
            await late.list_roles()
        await sdk.list_roles()  # both engines (local: two on one store) hold the current policy
        before = len(compiles)
        await sdk.create_user_roles("late", ["admin"])
        assert (await late.list_roles()).message.items
        await sdk.delete_user_roles("late")
        with pytest.raises(PermissionDeniedError):
            await late.list_roles()
        assert len(compiles) == before
