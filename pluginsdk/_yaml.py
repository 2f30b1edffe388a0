"""YAML loading whose errors name the place: one helper for configuration, template and input files.

PyYAML's own errors are not `ValueError`s and carry the position in a `Mark`; readers of files catch
`ValueError` (as they do for JSON), so `load_yaml` turns a YAML error into a `YamlSyntaxError` (a
`ValueError`) whose message is `line L, column C: problem` (1-based), for the caller to prefix with the
file's name, as it does for a JSON error.
"""

from __future__ import annotations

from typing import Any

__all__ = ["YamlSyntaxError", "load_yaml"]


class YamlSyntaxError(ValueError):
    """Malformed YAML; `source`, `line` and `column` (1-based, None when PyYAML knows no position)."""

    def __init__(self, message: str, source: str, line: int | None, column: int | None) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.column = column


def load_yaml(text: str, source: str) -> Any:
    """`yaml.safe_load(text)`; malformed text raises YamlSyntaxError with line and column (`source` kept on it)."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if mark is None:
            raise YamlSyntaxError(str(problem), source, None, None) from None
        line, column = mark.line + 1, mark.column + 1
        raise YamlSyntaxError(f"line {line}, column {column}: {problem}", source, line, column) from None
