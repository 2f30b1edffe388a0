"""One operation's call: what the engine knows about it, passed explicitly from step to step.

The engine builds a `Call` for each `execute`, the authorizer fills in what it decided on (the principal
with its roles, the policy version, the stored object tier 2 read, whether an administrator existed before
a policy write) and the handler receives it; a policy write records the revision it produced on it, which
the audit hook reads. Nothing about a call travels any other way, so each step's inputs are in its
signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pluginsdk.operations import Operation, OperationSpec
from pluginsdk.principal import Principal

__all__ = ["Call"]


@dataclass(slots=True, eq=False)
class Call:
    """One call of one operation, from the engine through authorization to its handler."""

    op: Operation[Any]
    spec: OperationSpec
    principal: Principal
    """The caller; after authorization, with its roles resolved."""
    route_path: str | None = None
    """The concrete path a REST request arrived on; None in-process (tier 1 then uses the operation's path)."""
    route_checked: bool = False
    """The server already decided (and counted) tier 1 on `route_path` before it read the input."""
    policy_version: int | None = None
    """The policy version the call was authorized on (a handler answering about the policy answers on it)."""
    stored: Any = None
    """The stored object tier 2 read and allowed for a read of one object: its handler answers with it."""
    had_administrator: bool | None = None
    """For a policy write: whether someone could administer roles before it (None: unknown, checked strictly)."""
    revision: int | None = None
    """The policy revision the call's write produced (`AuthStore.bump_policy_version`)."""
