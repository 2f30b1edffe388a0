"""One operation's call: what the engine knows about it, passed explicitly from step to step.

The engine builds a `Call` for each `execute`, the authorizer fills in what it decided on (the principal
with its roles, the policy version, the stored object tier 2 read, whether an administrator existed before
a policy write) and the handler receives it; a policy write records the revision it produced on it, which
the audit hook reads. Nothing about a call travels any other way, so each step's inputs are in its
signature.
"""

from __future__ import annotations

from typing import Any

from pluginsdk.operations import Operation, OperationSpec
from pluginsdk.principal import Principal

__all__ = ["Call"]


class Call:
    """One call of one operation, from the engine through authorization to its handler.

    A plain class, not a dataclass: the engine module imports it on every CLI call, and a dataclass compiles
    its methods at import (about a millisecond)."""

    __slots__ = (
        "had_administrator",
        "op",
        "policy_version",
        "principal",
        "revision",
        "route_checked",
        "route_path",
        "spec",
        "stored",
    )

    def __init__(
        self,
        op: Operation[Any],
        spec: OperationSpec,
        principal: Principal,
        route_path: str | None = None,
        route_checked: bool = False,
    ) -> None:
        self.op = op
        self.spec = spec
        self.principal = principal
        """The caller; after authorization, with its roles resolved."""
        self.route_path = route_path
        """The concrete path a REST request arrived on; None in-process (tier 1 then uses the operation's
        path)."""
        self.route_checked = route_checked
        """The server already decided (and counted) tier 1 on `route_path` before it read the input."""
        self.policy_version: int | None = None
        """The policy version the call was authorized on (a handler answering about the policy answers on
        it)."""
        self.stored: Any = None
        """The stored object tier 2 read and allowed for a read of one object: its handler answers with it."""
        self.had_administrator: bool | None = None
        """For a policy write: whether someone could administer roles before it (None: unknown, checked
        strictly)."""
        self.revision: int | None = None
        """The policy revision the call's write produced (`AuthStore.bump_policy_version`)."""
