"""The router of the one request path: (method, path) -> endpoint and path parameters, or the methods the
path is served with (405), or nothing (404).

OpenAPI's matching rule: a concrete path belongs to one path template, the most specific one that matches
it (literal segments win over `{name}` segment by segment, left to right: `/api/v1/templates/refresh` is the
POST-only refresh route, never `GET /api/v1/templates/{template_id}` with the id `refresh`), so the `Allow`
header and the OpenAPI document agree. `{name}` matches one non-empty segment. Hits are cached per
(method, path), bounded.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["Router"]

E = TypeVar("E")

_Pattern = tuple[tuple[bool, str], ...]


def _specificity(pattern: _Pattern) -> tuple[int, ...]:
    return tuple(1 if is_param else 0 for is_param, _ in pattern)


class Router(Generic[E]):
    _CACHE_MAX = 4096

    def __init__(self, entries: list[tuple[str, str, E]]) -> None:
        templates: dict[str, dict[str, E]] = {}
        for method, path, endpoint in entries:
            templates.setdefault(path, {})[method] = endpoint
        self._by_len: dict[int, list[tuple[_Pattern, dict[str, E], str]]] = {}
        for path, methods in templates.items():
            segments = path.split("/")
            pattern = tuple((True, s[1:-1]) if s.startswith("{") and s.endswith("}") else (False, s) for s in segments)
            self._by_len.setdefault(len(segments), []).append((pattern, methods, path))
        for candidates in self._by_len.values():
            candidates.sort(key=lambda c: _specificity(c[0]))
        self._cache: dict[tuple[str, str], tuple[E, dict[str, str]]] = {}

    def _template(self, path: str) -> tuple[dict[str, E], dict[str, str], str] | None:
        """The most specific template matching `path`: its endpoints by method, the path parameters and the
        template itself."""
        segments = path.split("/")
        for pattern, methods, template in self._by_len.get(len(segments), ()):
            params = _bind(pattern, segments)
            if params is not None:
                return methods, params, template
        return None

    def template(self, path: str) -> str | None:
        """The path template `path` belongs to, or None (a low-cardinality label for any concrete path)."""
        found = self._template(path)
        return found[2] if found is not None else None

    def match(self, method: str, path: str) -> tuple[E, dict[str, str]] | None:
        """The endpoint serving `method path` and its path parameters, or None."""
        key = (method, path)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        found = self._template(path)
        if found is None or method not in found[0]:
            return None
        if len(self._cache) >= self._CACHE_MAX:
            self._cache.clear()
        self._cache[key] = result = (found[0][method], found[1])
        return result

    def allowed(self, path: str) -> list[str]:
        """Every method `path` is served with (empty: no route has this path)."""
        found = self._template(path)
        return sorted(found[0]) if found is not None else []


def _bind(pattern: _Pattern, segments: list[str]) -> dict[str, str] | None:
    params: dict[str, str] = {}
    for (is_param, text), seg in zip(pattern, segments, strict=True):
        if is_param:
            if not seg:
                return None
            params[text] = seg
        elif seg != text:
            return None
    return params
