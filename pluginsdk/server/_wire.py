"""A request body off the wire: read within the size limit, parsed as strict JSON within the depth limit.

Strict JSON (`pluginsdk.files.parse_json`, the parser of every door): no `NaN`/`Infinity` literals, no lone
UTF-16 surrogates (escaped or raw), valid UTF-8, no number that overflows to infinity, no nesting deeper than
`MAX_DEPTH`. Each breach is a 400 naming the body, before the input reaches the operation (so nothing is
stored). `parse_json` checks the text (`parse_text`), then the parsed value's depth and numbers
(`check_limits`). The door walks the value before building the operation, or, for an operation whose own
checks bound every value (`Operation.bounds_own_input`), only when its one strict pass refused the body: the
same body, the same refusal.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import Receive

from .. import files
from ..errors import ValidationError
from .limits import body_timed_out, too_large

__all__ = ["ClientGone", "check_limits", "parse_json", "parse_text", "read_body"]


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
    value = parse_text(raw)
    check_limits(value)
    return value


def parse_text(raw: bytes) -> Any:
    """`parse_json` without the depth and number walk (`check_limits`), or ValidationError (400)."""
    try:
        return files.parse_text(raw)
    except ValueError as exc:
        raise _invalid(str(exc)) from None


def check_limits(value: Any) -> None:
    """A parsed body's depth and finite numbers (`files.check_limits`), or ValidationError (400)."""
    try:
        files.check_limits(value)
    except ValueError as exc:
        raise _invalid(str(exc)) from None
