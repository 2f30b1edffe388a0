"""A request body off the wire: read within the size limit, parsed as strict JSON within the depth limit.

Strict JSON: no `NaN`/`Infinity` literals, no lone UTF-16 surrogates (escaped or raw), valid UTF-8, no
number that overflows to infinity, no nesting deeper than `MAX_JSON_DEPTH`. Each breach is a 400 naming
the body, before the input reaches the operation (so nothing is stored).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from pydantic_core import from_json
from starlette.types import Receive

from ..errors import ValidationError
from .limits import MAX_JSON_DEPTH, body_timed_out, too_large

__all__ = ["ClientGone", "parse_json", "read_body"]

_CONTAINERS = (dict, list)


class ClientGone(Exception):
    """The client disconnected before its body arrived: there is no one to answer."""


async def read_body(receive: Receive, limit: int, seconds: float) -> bytes:
    """The whole body within `seconds` (else 408), refusing (413) the moment it grows past `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(seconds):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone
                chunk: bytes = message.get("body", b"")
                if chunk:
                    size += len(chunk)
                    if size > limit:
                        raise too_large(limit)
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise body_timed_out(seconds) from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _invalid(why: str) -> ValidationError:
    return ValidationError(
        f"The request body is not valid JSON: {why}.",
        details={"field": "body", "value": None, "expected": "a JSON object"},
    )


def parse_json(raw: bytes) -> Any:
    """The JSON value of `raw`, or ValidationError (400) saying what is wrong with it."""
    try:
        value = from_json(raw, allow_inf_nan=False, cache_strings="keys")
    except ValueError as exc:
        reason = str(exc)
        if "recursion limit" in reason:
            raise _invalid(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
        raise _invalid(reason) from None
    _check(value)  # one pass over the containers: cheap next to validation
    return value


def _check(value: Any) -> None:
    """Depth and finite numbers, one nesting level at a time (no recursion on hostile input, and no stack
    entry per value: a body of 1,000 small objects is checked in a tenth of its parse time)."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_JSON_DEPTH:
            raise _invalid(f"nested deeper than {MAX_JSON_DEPTH} levels")
        inner: list[Any] = []
        for item in level:
            for v in item.values() if type(item) is dict else item:
                kind = type(v)
                if kind is dict or kind is list:
                    inner.append(v)
                elif kind is float and not math.isfinite(v):
                    raise _invalid("a number is out of range")
        level = inner
    if type(value) is float and not math.isfinite(value):
        raise _invalid("a number is out of range")
