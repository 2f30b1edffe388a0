"""One paging loop for every list operation, on any backend.

Two page styles exist in the catalog: token pages (auth-service listings: result `next_token`, passed back
as `starting_token`; only an absent token ends the listing, an empty page with a token does not) and offset
pages (provisioning listings: `limit`/`offset`, ending at `total_count` or an empty page; a listing whose
first page answers `as_of`, the active one, is walked in that view). A result that
is a page says which list its items are (`page_items()`, the `Paged` protocol), so a type checker follows
`PluginSDK.iterate(ListTemplatesQuery)` to `Template` items.

`PageToken` is the field type of every `starting_token`: a token is accepted only exactly as a listing
emitted it. Base64 decoders forgive a lot (padding `=`, characters outside the alphabet, the unused low
bits of the last character), so the signature alone would accept altered spellings of a valid token; the
field type refuses any text that is not canonical unpadded base64url segments joined by dots, before the
listing checks the signature. Either way the answer is 400 `Invalid pagination token`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar

import pydantic
from pydantic import AfterValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from .errors import ValidationError

if TYPE_CHECKING:
    from .operations import OperationSpec

__all__ = ["PAGE_TOKEN_PATTERN", "PageToken", "Paged", "is_canonical_token", "iterate_pages", "page_items"]

T_co = TypeVar("T_co", covariant=True)


class Paged(Protocol[T_co]):
    """The result of a list operation: one page of items of type `T_co`."""

    def page_items(self) -> Sequence[T_co]:
        """The items of this page, in order (the page's list field, or its `message`'s)."""
        ...


MAX_TOKEN_CHARS = 4096
"""Longest pagination token accepted (a listing's tokens are far shorter)."""
PAGE_TOKEN_PATTERN = r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$"  # noqa: S105 (a pattern, not a secret)
_TOKEN = re.compile(PAGE_TOKEN_PATTERN)


def _canonical_segment(segment: str) -> bool:
    if len(segment) % 4 == 1:
        return False
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return False
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") == segment


def is_canonical_token(token: str) -> bool:
    """Whether `token` is spelled exactly as a listing spells its tokens (unpadded base64url, dot-joined)."""
    return (
        len(token) <= MAX_TOKEN_CHARS
        and _TOKEN.fullmatch(token) is not None
        and all(_canonical_segment(s) for s in token.split("."))
    )


def _check_token(token: str) -> str:
    if not is_canonical_token(token):
        raise PydanticCustomError("invalid_pagination_token", "Invalid pagination token")
    return token


PageToken = Annotated[
    str,
    AfterValidator(_check_token),
    WithJsonSchema({"type": "string", "pattern": PAGE_TOKEN_PATTERN, "maxLength": MAX_TOKEN_CHARS}),
]
"""A `NextToken` passed back unmodified (anything else: 400 `Invalid pagination token`)."""


def _page(result: Any) -> Any:
    """The object holding the items: the result, or its `message` (`GET /auth/constraints`: `message.Items`)."""
    message = getattr(result, "message", None)
    return message if isinstance(message, pydantic.BaseModel) else result


def page_items(result: Any) -> list[Any]:
    """The list of items of a page result (`Paged.page_items`); ValidationError for a result that is no page."""
    items = getattr(result, "page_items", None)
    if items is None:
        raise ValidationError(f"{type(result).__name__} is not a page of items.")
    found: list[Any] = items()
    return found


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
            if "as_of" in fields and getattr(page, "as_of", None) is not None:
                params["as_of"] = page.as_of  # the view the first page took: the walk stays in it
            items = page_items(page)
            for item in items:
                yield item
            offset += len(items)
            if not items or offset >= int(getattr(page, "total_count", offset)):
                return
    else:
        for item in page_items(await run(params)):
            yield item
