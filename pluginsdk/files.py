"""Reading the files a user hands us (input, configuration and template files): bounded, and YAML errors
that name the place.

Every such file is read with `read_bounded`: at most `MAX_INPUT_BYTES`, else `InputTooLargeError` before
anything is parsed. `load_yaml` bounds what YAML can make of a small file: aliases are expanded in the
count, so a document whose value — every alias written out — is larger than `MAX_INPUT_BYTES` (the
"billion laughs" alias bomb: 528 bytes that expand to 77 MB), nests deeper than `MAX_NESTING`, or refers
to itself is refused before it is built. Both errors are `InputTooLargeError`.

PyYAML's own errors are not `ValueError`s and carry the position in a `Mark`; readers of files catch
`ValueError` (as they do for JSON), so `load_yaml` turns a YAML error into a `YamlSyntaxError` (a
`ValueError`) whose message is `line L, column C: problem` (1-based), for the caller to prefix with the
file's name, as it does for a JSON error. docs/input.md states the limits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_NESTING",
    "InputTooLargeError",
    "YamlSyntaxError",
    "load_json",
    "load_yaml",
    "read_bounded",
]

MAX_INPUT_BYTES = 4 << 20
"""Largest file read (4 MiB), and largest value a YAML document may expand to, aliases written out."""
MAX_NESTING = 64
"""Deepest nesting of mappings and sequences in a file (operations accept 32 levels in a value)."""


class YamlSyntaxError(ValueError):
    """Malformed YAML; `source`, `line` and `column` (1-based, None when PyYAML knows no position)."""

    def __init__(self, message: str, source: str, line: int | None, column: int | None) -> None:
        super().__init__(message)
        self.source = source
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
    """`json.loads(text)` ({} for blank text); nesting too deep for the parser is an InputTooLargeError."""
    import json

    try:
        return json.loads(text) if text.strip() else {}
    except RecursionError:
        raise InputTooLargeError("nested too deeply") from None


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
        raise InputTooLargeError("nested too deeply") from None
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
        if depth > MAX_NESTING:
            raise InputTooLargeError(f"nested deeper than {MAX_NESTING} levels")
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else f"{limit} bytes"
