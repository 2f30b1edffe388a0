"""Stored requests as the request handlers read them: loaded, with their machines, brought up to date
(the attributes authorization decides on are `backends/local/attributes.py`'s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pluginsdk.errors import NotFoundError
from pluginsdk.models import Machine, Request, RequestType

from ..provisioning.reconciler import reconcile

if TYPE_CHECKING:
    from ..deps import Deps


async def load_request(deps: Deps, request_id: str, *, for_update: bool = False) -> Request:
    r = await deps.store.get_request(request_id, for_update=for_update)
    if r is None:
        raise NotFoundError("request", request_id, f"Request '{request_id}' not found.")
    return r


async def with_machines(deps: Deps, r: Request) -> Request:
    return (await with_machines_all(deps, [r]))[0]


async def with_machines_all(deps: Deps, requests: list[Request], *, read_here: bool = False) -> list[Request]:
    """The requests with their machine records, read in at most two queries (a status poll of 100 requests
    is one query, not 100). `read_here`: the requests were read from the store for this call and nothing else
    holds them, so their machines are set on them rather than on copies (a copy costs ~6 µs a request, more
    than the read)."""
    found: dict[str, list[Machine]] = {}
    for returns in (False, True):
        ids = [r.request_id for r in requests if (r.request_type is RequestType.RETURN) is returns]
        if ids:
            found.update(await deps.store.machines_of_requests(ids, returns=returns))
    if not read_here:
        return [r.model_copy(update={"machines": found[r.request_id]}) for r in requests]
    for r in requests:
        r.machines = found[r.request_id]
    return requests


async def fresh(deps: Deps, r: Request, *, lightweight: bool = False) -> Request:
    """The request advanced from its provider (unless lightweight or finished)."""
    if lightweight or r.status.terminal or r.dry_run:
        return r
    return await reconcile(deps, r)
