"""Reading what a user hands us (input, configuration and template files, JSON text at every door): bounded,
and errors that name the place.

Every such file is read with `read_bounded`: at most `MAX_INPUT_BYTES`, else `InputTooLargeError` before
anything is parsed. `load_yaml` bounds what YAML can make of a small file: aliases are expanded in the
count, so a document whose value — every alias written out — is larger than `MAX_INPUT_BYTES` (the
"billion laughs" alias bomb: 528 bytes that expand to 77 MB), nests deeper than `MAX_DEPTH`, or refers
to itself is refused before it is built. Both errors are `InputTooLargeError`.

`parse_json` is the one JSON parser for a caller's text — the REST body, CLI input and option values, the
console's fields, JSON files: strict JSON (no `NaN`/`Infinity`, no lone surrogate, no number that overflows
to infinity) nesting at most `MAX_DEPTH` levels, the limit every operation applies to its values. The
parser's own recursion bound is fixed (pydantic-core's, far above `MAX_DEPTH`) and the depth is counted
one level at a time after it, so the answer does not depend on `sys.getrecursionlimit()`.

PyYAML's own errors are not `ValueError`s and carry the position in a `Mark`; readers of files catch
`ValueError` (as they do for JSON), so `load_yaml` turns a YAML error into a `YamlSyntaxError` (a
`ValueError`) whose message is `line L, column C: problem` (1-based), for the caller to prefix with the
file's name, as it does for a JSON error. docs/input.md states the limits.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from pydantic_core import from_json

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "TOO_DEEP",
    "InputTooLargeError",
    "JsonSyntaxError",
    "YamlSyntaxError",
    "check_limits",
    "load_json",
    "load_yaml",
    "parse_json",
    "parse_text",
    "read_bounded",
]

MAX_INPUT_BYTES = 4 << 20
"""Largest file read (4 MiB), and largest value a YAML document may expand to, aliases written out."""
MAX_DEPTH = 32
"""Deepest nesting of objects and arrays (mappings and sequences) in a caller's JSON at every door, in a file,
and in one operation's input value (`pluginsdk.models.values`)."""
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"
"""The reason every door gives for input nested past `MAX_DEPTH`."""


class YamlSyntaxError(ValueError):
    """Malformed YAML; `source`, `line` and `column` (1-based, None when PyYAML knows no position)."""

    def __init__(self, message: str, source: str, line: int | None, column: int | None) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.column = column


class JsonSyntaxError(ValueError):
    """Text that is not strict JSON; `line` and `column` (1-based) where the parser stopped, else None."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class InputTooLargeError(ValueError):
    """A file, or what its YAML aliases expand to, is larger (or deeper) than the limits allow."""


def read_bounded(path: str | Path, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of `path`, refused (`InputTooLargeError`) past `limit` bytes without reading the rest.

    OSError and UnicodeDecodeError pass through for the caller to name the file."""
    with Path(path).open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputTooLargeError(f"larger than {_size(limit)} (the limit for a file read)")
    return data.decode("utf-8")


def load_json(text: str) -> Any:
    """`parse_json(text)` of a file's text, {} for blank text."""
    return parse_json(text) if text.strip() else {}


def parse_json(data: str | bytes) -> Any:
    """The value of strict JSON `data`; nesting past `MAX_DEPTH` is InputTooLargeError (`TOO_DEEP`), anything
    else amiss a JsonSyntaxError."""
    value = parse_text(data)
    check_limits(value)  # one pass over the containers: cheap next to the parse
    return value


def parse_text(data: str | bytes) -> Any:
    """`parse_json` without the depth and number walk (`check_limits`): for a caller whose own checks bound
    every value it keeps (the REST door, `Operation.bounds_own_input`), which walks only what they refuse."""
    try:
        return from_json(data, allow_inf_nan=False, cache_strings="keys")
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("recursion limit exceeded"):
            raise InputTooLargeError(TOO_DEEP) from None
        at = re.search(r" at line (\d+) column (\d+)$", reason)
        raise JsonSyntaxError(reason, *(int(n) for n in at.groups()) if at else ()) from None


_CONTAINERS = (dict, list)


def check_limits(value: Any) -> None:
    """A parsed value's depth (InputTooLargeError) and finite numbers (JsonSyntaxError), one nesting level at a
    time (no recursion on hostile input, and no stack entry per value: a body of 1,000 small objects is checked
    in a tenth of its parse time)."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise InputTooLargeError(TOO_DEEP)
        inner: list[Any] = []
        for item in level:
            for v in item.values() if type(item) is dict else item:
                kind = type(v)
                if kind is dict or kind is list:
                    inner.append(v)
                elif kind is float and not math.isfinite(v):
                    raise JsonSyntaxError("a number is out of range")
        level = inner
    if type(value) is float and not math.isfinite(value):
        raise JsonSyntaxError("a number is out of range")


def load_yaml(text: str, source: str) -> Any:
    """`yaml.safe_load(text)` with the bounds above; malformed text raises YamlSyntaxError with line and
    column (`source` kept on it)."""
    import yaml

    if len(text) > MAX_INPUT_BYTES:
        raise InputTooLargeError(f"larger than {_size(MAX_INPUT_BYTES)} (the limit for a file read)")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if mark is None:
            raise YamlSyntaxError(str(problem), source, None, None) from None
        line, column = mark.line + 1, mark.column + 1
        raise YamlSyntaxError(f"line {line}, column {column}: {problem}", source, line, column) from None
    except RecursionError:
        raise InputTooLargeError(TOO_DEEP) from None
    finally:
        loader.dispose()


def _check_expansion(root: Any) -> None:
    """Refuse a node graph whose value, every alias expanded, exceeds the limits; linear in the graph's size
    (each node's expanded size is computed once, however many aliases refer to it)."""
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = len(node.value) + 2
            continue
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
        if done:
            on_path.discard(key)
            sizes[key] = 2 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_INPUT_BYTES:
                raise InputTooLargeError(
                    f"its value is larger than {_size(MAX_INPUT_BYTES)} once its aliases are expanded"
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise InputTooLargeError("an alias refers to a node that holds it (a recursive document)")
        if depth > MAX_DEPTH:
            raise InputTooLargeError(TOO_DEEP)
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else f"{limit} bytes"
