"""What every input value must be, whatever the interface: something the store and every client can hold.

JSON parsers differ on the edges (Python reads `NaN`, `1e400` as infinity and `"\\ud800"` as a lone
surrogate; SQLite and PostgreSQL hold 64-bit integers and UTF-8 text without NUL), so an operation checks its
whole input, free-form dictionaries included, before any work: a value outside these limits is a 400
`VALIDATION_ERROR` naming where it is, and nothing is stored.

- numbers: finite (no NaN or infinity); integers within the signed 64-bit range;
- text (values and keys): valid Unicode (no lone UTF-16 surrogate) and no NUL character;
- nesting: at most `MAX_DEPTH` levels of objects and arrays (`pluginsdk.files`: the same limit every door
  applies while parsing a caller's JSON), refused with the one reason `TOO_DEEP`.
"""

import math
from typing import Any

import pydantic

from ..files import MAX_DEPTH, TOO_DEEP

__all__ = ["MAX_INT", "MIN_INT", "is_storable", "text_problem", "value_problem"]

MAX_INT = 2**63 - 1
"""Largest integer accepted (SQLite INTEGER / PostgreSQL BIGINT)."""
MIN_INT = -(2**63)
"""Smallest integer accepted."""


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored, or None."""
    if "\x00" in text:
        return "text must not contain the NUL character (U+0000)"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "text must not contain a lone UTF-16 surrogate (U+D800-U+DFFF)"
    return None


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if not MIN_INT <= value <= MAX_INT:
            return f"integer out of range (must be within {MIN_INT}..{MAX_INT})"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "number must be finite (NaN and infinity are not JSON numbers)"
    return None


def _children(value: Any) -> list[tuple[str, Any]] | None:
    """(path suffix, child) of a container, or None for a scalar."""
    if isinstance(value, dict):
        return [(f".{k}" if isinstance(k, str) else f"[{k!r}]", v) for k, v in value.items()]
    if isinstance(value, list | tuple | set | frozenset):
        return [(f"[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, pydantic.BaseModel):
        return [(f".{k}", v) for k, v in value]
    return None


def _all_storable(items: Any, depth: int) -> bool:
    """The loop of `is_storable` over a container's items, scalars checked inline (this runs on every call)."""
    for item in items:
        kind = type(item)
        if kind is str:
            if "\x00" in item or not (item.isascii() or text_problem(item) is None):
                return False
        elif item is None or kind is bool:
            continue
        elif kind is int:
            if not MIN_INT <= item <= MAX_INT:
                return False
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif not is_storable(item, depth):
            return False
    return True


def is_storable(value: Any, depth: int = 0) -> bool:
    """Whether every part of `value` is storable: the fast check every operation runs (microseconds for a
    typical input); `value_problem` then locates a problem. Recursion stops at `MAX_DEPTH`."""
    kind = type(value)
    if kind is dict:
        return depth < MAX_DEPTH and _all_storable(value, depth) and _all_storable(value.values(), depth + 1)
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return depth < MAX_DEPTH and _all_storable(value, depth + 1)
    if isinstance(value, pydantic.BaseModel):
        return depth < MAX_DEPTH and _all_storable(value.__dict__.values(), depth + 1)
    if isinstance(value, str | int | float):
        return _scalar_problem(value) is None
    return True


def value_problem(value: Any, where: str = "") -> tuple[str, str] | None:
    """(location, reason) of the first part of `value` no store or JSON client can hold, or None.

    Iterative, so a hostile nesting cannot exhaust the stack; dictionary keys are checked like values.
    """
    if is_storable(value):
        return None
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        children = _children(item)
        if children is None:
            problem = _scalar_problem(item)
            if problem is not None:
                return path.lstrip(".") or "input", problem
            continue
        if depth >= MAX_DEPTH:
            return path.lstrip(".") or "input", TOO_DEEP
        if isinstance(item, dict):
            for key in item:
                problem = _scalar_problem(key) if isinstance(key, str | int) else None
                if problem is not None:
                    return path.lstrip(".") or "input", f"a key: {problem}"
        stack.extend((child, path + suffix, depth + 1) for suffix, child in reversed(children))
    return None
