"""One operation's call: what the engine knows about it, passed explicitly from step to step.

The engine builds a `Call` for each `execute`, the authorizer fills in what it decided on (the principal
with its roles, the policy version, the stored object tier 2 read, whether an administrator existed before
a policy write) and the handler receives it; a policy write records the revision it produced on it, which
the audit hook reads. Nothing about a call travels any other way, so each step's inputs are in its
signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pluginsdk.operations import Operation, OperationSpec
from pluginsdk.principal import Principal

if TYPE_CHECKING:
    from pluginsdk.models.plans import AccessPlan

__all__ = ["Authorizer", "Call"]

T = TypeVar("T")


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


class Authorizer(Protocol):
    """The auth service as the engine sees it: authentication, tier 1 and tier 2."""

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an HTTP `Authorization` header value (API key, or `Bearer <JWT>`).

        Raises AuthenticationError (401) for missing, unknown, expired or deactivated credentials.
        """
        ...

    async def authorize(self, call: Call) -> None:
        """Resolve roles, check the route (`call.route_path`, the concrete path called, or the operation's first
        path) and the stored object the operation names, and fill in `call` with what was decided on (the
        principal with its roles, ...); raise PermissionDeniedError or NotFoundError."""
        ...

    def authorized_at_hand(self, call: Call) -> bool:
        """`authorize` without a coroutine when everything it needs is at hand (True: done, `call` filled in; a
        refusal raises as there), else False with nothing done: the engine then awaits `authorize`."""
        ...

    async def authorize_also(
        self, principal: Principal, spec: OperationSpec, calls: Iterable[tuple[Operation, str]]
    ) -> None:
        """Tier 1 and tier 2 of `spec` for each (operation, concrete route path): what a call must also be allowed
        when it does another operation's work (a create or an import that replaces a constraint needs what
        `PUT /auth/constraints/{id}` needs). Raises like `authorize`; the principal is the handler's."""
        ...

    async def check_route(self, principal: Principal, method: str, path: str) -> None:
        """Tier 1 alone, on the concrete request path: raise PermissionDeniedError unless it may be called.

        The server calls it before it reads the input, so a caller who may not call a route gets 403 whatever
        its body (execute checks tier 1 again, with the object)."""
        ...

    async def filter_allowed(
        self,
        principal: Principal,
        object_type: str,
        items: list[T],
        attrs: Callable[[T], Mapping[str, Any]],
        method: str,
    ) -> list[T]:
        """The items of a listing this principal may see."""
        ...

    async def plan(self, principal: Principal, object_type: str, method: str) -> AccessPlan:
        """The query plan of a listing: which objects of `object_type` this principal may use `method` on."""
        ...
