"""One paging loop for every list operation, on any backend.

Two page styles exist in the catalog: token pages (auth-service listings: result `next_token`, passed back
as `starting_token`; only an absent token ends the listing, an empty page with a token does not) and offset
pages (provisioning listings: `limit`/`offset`, ending at `total_count` or an empty page). The items are
the result's one list field (or its `message`'s). Interfaces (CLI `--all`, MCP) just iterate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pydantic

from .errors import ValidationError
from .operations import OperationSpec

__all__ = ["iterate_pages", "page_items"]


def _page(result: Any) -> Any:
    """The object holding the items: the result, or its `message` (`GET /auth/constraints`: `message.Items`)."""
    message = getattr(result, "message", None)
    return message if isinstance(message, pydantic.BaseModel) else result


def page_items(result: Any) -> list[Any]:
    """The list of items of a page result (its one list-typed field)."""
    result = _page(result)
    lists = [name for name, value in result if isinstance(value, list)]
    if len(lists) != 1:
        raise ValidationError(f"{type(result).__name__} is not a page of items.")
    items: list[Any] = getattr(result, lists[0])
    return items


async def iterate_pages(
    spec: OperationSpec, params: dict[str, Any], run: Callable[[dict[str, Any]], Awaitable[Any]]
) -> AsyncIterator[Any]:
    """Yield every item of a list operation, page after page."""
    fields = set(spec.input_fields)
    if "starting_token" in fields:
        params = dict(params)
        while True:
            page = await run(params)
            for item in page_items(page):
                yield item
            token = getattr(_page(page), "next_token", None)
            if not token:
                return
            params["starting_token"] = token
    elif {"limit", "offset"} <= fields:
        params = dict(params)
        offset = int(params.get("offset", 0))
        while True:
            page = await run({**params, "offset": offset})
            items = page_items(page)
            for item in items:
                yield item
            offset += len(items)
            if not items or offset >= int(getattr(page, "total_count", offset)):
                return
    else:
        for item in page_items(await run(params)):
            yield item
