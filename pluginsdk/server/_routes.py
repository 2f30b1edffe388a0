"""The router of the one request path: (method, path) -> endpoint and path parameters, or the methods the
path is served with (405), or nothing (404).

Starlette's semantics for `{name}` (one non-empty segment); routes are tried in registration order (literal
segments first, see `_openapi.route_key`). Hits are cached per (method, path), bounded.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["Router"]

E = TypeVar("E")

_Pattern = tuple[tuple[bool, str], ...]


class Router(Generic[E]):
    _CACHE_MAX = 4096

    def __init__(self, entries: list[tuple[str, str, E]]) -> None:
        self._by_len: dict[int, list[tuple[str, _Pattern, E]]] = {}
        for method, path, endpoint in entries:
            segments = path.split("/")
            pattern = tuple((True, s[1:-1]) if s.startswith("{") and s.endswith("}") else (False, s) for s in segments)
            self._by_len.setdefault(len(segments), []).append((method, pattern, endpoint))
        self._cache: dict[tuple[str, str], tuple[E, dict[str, str]]] = {}

    def match(self, method: str, path: str) -> tuple[E, dict[str, str]] | None:
        """The endpoint serving `method path` and its path parameters, or None."""
        key = (method, path)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        segments = path.split("/")
        for route_method, pattern, endpoint in self._by_len.get(len(segments), ()):
            if route_method == method:
                params = _bind(pattern, segments)
                if params is not None:
                    if len(self._cache) >= self._CACHE_MAX:
                        self._cache.clear()
                    self._cache[key] = found = (endpoint, params)
                    return found
        return None

    def allowed(self, path: str) -> list[str]:
        """Every method `path` is served with (empty: no route has this path)."""
        segments = path.split("/")
        methods = {m for m, pattern, _ in self._by_len.get(len(segments), ()) if _bind(pattern, segments) is not None}
        return sorted(methods)


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
