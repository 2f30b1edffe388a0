"""Writing small policies in tests: a role, its routes, and allow/deny constraints on object attributes."""

from __future__ import annotations

import itertools
from typing import Any

from pluginsdk import PluginSDK, SDKError

ALL = ("GET", "POST", "PUT", "DELETE")
_ids = itertools.count()


async def role(sdk: PluginSDK, name: str, *, routes: str | None = "/api/v1/*", methods: tuple[str, ...] = ALL) -> None:
    """Create `name` and let it call the routes matching `routes` (tier 1) with `methods`."""
    await sdk.create_role(role_name=name, description=f"test role {name}")
    if routes:
        await rule(sdk, name, "api", [("route__path", "equals", routes)], methods)


async def rule(
    sdk: PluginSDK,
    role_name: str,
    object_type: str,
    criteria: list[tuple[str, str, str]],
    methods: tuple[str, ...] = ("GET",),
    kind: str = "allow",
) -> str:
    """One constraint: all `criteria` (field, operator, value) must hold; `kind` for `methods` of the role."""
    cid = f"t-{role_name}-{next(_ids)}"
    await sdk.create_constraint(
        cid,
        name=cid,
        description=f"test rule {cid}",
        object_type=object_type,
        criteria_and=[{"field": f, "operator": o, "value": v} for f, o, v in criteria],
        group_permissions=[{"groupId": role_name, "permission": m, "permissionType": kind} for m in methods],
    )
    return cid


async def failure(call: Any) -> SDKError:
    """The SDKError an awaitable raises (fails the test when it succeeds)."""
    try:
        await call
    except SDKError as exc:
        return exc
    raise AssertionError("the call succeeded")


def same_answer(hidden: SDKError, missing: SDKError, hidden_id: str, missing_id: str) -> None:
    """The answer for an object the caller may not read equals the answer for a missing one (ids aside)."""
    assert (hidden.status, hidden.error_code) == (missing.status, missing.error_code) == (404, missing.error_code)
    assert hidden.message == missing.message.replace(missing_id, hidden_id)
    assert str(hidden.details).replace(hidden_id, "ID") == str(missing.details).replace(missing_id, "ID")
