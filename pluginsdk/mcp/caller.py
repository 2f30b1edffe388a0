"""Tools run as the caller of one HTTP request: the remote transport's executor (`pluginsdk.server.remote_mcp`).

Each operation goes to the served backend with the request's principal and the concrete REST route behind
the tool, so both tiers decide exactly as they do for the REST call: tier 1 on that route, tier 2 on the
object, then the handler. Nothing is kept between requests: a `Caller` is built per request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..operations import Operation, OperationSpec, get_spec

if TYPE_CHECKING:
    from ..principal import Principal
    from ..server.contract import ServedBackend

__all__ = ["Caller"]

R = TypeVar("R")
_PATH_PARAM = re.compile(r"{(\w+)}")


class Caller:
    """An `Executor` (`pluginsdk.waiting`) for one authenticated principal on a served backend."""

    __slots__ = ("backend", "principal")

    def __init__(self, backend: ServedBackend, principal: Principal) -> None:
        self.backend = backend
        self.principal = principal

    async def execute(self, operation: Operation[R], /) -> R:
        """Tier 1 on the operation's concrete route, tier 2, then the handler (the REST route's path)."""
        spec = get_spec(operation)
        return await self.backend.execute(operation, self.principal, route_path=spec.concrete_route(operation))

    async def deny_first(self, spec: OperationSpec, fields: Mapping[str, Any]) -> None:
        """Tier 1 alone on the route the fields name, for a call whose input is invalid: a caller the route
        denies gets the REST API's 403, not a 400 about its arguments."""
        route = spec.route
        if route is None or spec.policy.unauthenticated:
            return

        def fill(match: re.Match[str]) -> str:
            value = fields.get(match.group(1))
            return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else match.group(0)

        await self.backend.check_route(self.principal, spec.method, _PATH_PARAM.sub(fill, route))
