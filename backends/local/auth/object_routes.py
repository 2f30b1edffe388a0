"""The API routes that act on one object of a type: what a check reports besides the object decision, and what a
grant of both tiers (`grant_access`) opens.

A call on an object passes two tiers: tier 1 on the route (object type `api`, `route__path`), tier 2 on the
object. The routes of an object type are the catalog operations whose policy names that type and reads the
object's attributes from their input (`Policy.fields`: get, update, delete, create, ...); a listing, which
filters what it shows by tier 2, is not one of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pluginsdk.operations import CATALOG

__all__ = ["ObjectRoute", "method_routes", "object_routes", "other_routes", "route_pattern"]

_PARAM = re.compile(r"{(\w+)}")
_ORDER = ("GET", "PUT", "POST", "DELETE")


@dataclass(frozen=True, slots=True)
class ObjectRoute:
    """One path of an operation on objects of a type, with the attribute each path parameter carries."""

    operation: str
    method: str
    template: str
    params: tuple[tuple[str, str | None], ...]
    """(path parameter, the object attribute it carries, or None)."""

    def concrete(self, attributes: Mapping[str, Any]) -> str | None:
        """The path for an object with these attributes; None when a parameter's attribute is not given as one
        path segment (the route's answer then depends on the id)."""
        path = self.template
        for name, attribute in self.params:
            value = attributes.get(attribute) if attribute is not None else None
            if not isinstance(value, str) or not value or "/" in value:
                return None
            path = path.replace("{" + name + "}", value)
        return path


@functools.cache
def _all_routes() -> tuple[ObjectRoute, ...]:
    out = []
    for spec in CATALOG.values():
        if spec.rest is None or spec.policy.unauthenticated:
            continue
        by_field = {f: a for a, f in spec.policy.fields.items()} if spec.policy.object_type else {}
        for path in spec.rest.paths:
            params = tuple((n, by_field.get(n)) for n in _PARAM.findall(path))
            out.append(ObjectRoute(spec.name, spec.method, path, params))
    return tuple(sorted(out, key=lambda r: (_ORDER.index(r.method) if r.method in _ORDER else 9, r.template)))


@functools.cache
def _object_operations() -> dict[str, frozenset[str]]:
    """object type -> the operations acting on one object of it."""
    found: dict[str, set[str]] = {}
    for spec in CATALOG.values():
        if spec.rest is not None and spec.policy.object_type and spec.policy.fields:
            found.setdefault(spec.policy.object_type, set()).add(spec.name)
    return {t: frozenset(ops) for t, ops in found.items()}


def object_routes(object_type: str, methods: Iterable[str] | None = None) -> list[ObjectRoute]:
    """The routes acting on one object of `object_type` (for these methods; all when None), in method order."""
    return list(_routes_of(object_type, None if methods is None else frozenset(m.upper() for m in methods)))


@functools.lru_cache(maxsize=512)
def method_routes(object_type: str, method: str) -> tuple[ObjectRoute, ...]:
    """`object_routes(object_type, (method,))` for an upper-case method, kept: a subject check asks it on every
    call."""
    return _routes_of(object_type, frozenset((method,)))


@functools.lru_cache(maxsize=512)
def _routes_of(object_type: str, wanted: frozenset[str] | None) -> tuple[ObjectRoute, ...]:
    """`object_routes`, kept: a check asks it on every call."""
    ops = _object_operations().get(object_type, frozenset())
    return tuple(r for r in _all_routes() if r.operation in ops and (wanted is None or r.method in wanted))


def route_pattern(route: ObjectRoute, criteria_and: Sequence[Mapping[str, Any]]) -> str:
    """The `route__path` pattern a grant on the objects `criteria_and` selects needs for this route: each path
    parameter narrowed by an `equals` or `starts_with` criterion on the attribute it carries (never with a `/`:
    a value adds no path structure), else `*`."""
    path = route.template
    for name, attribute in route.params:
        segment = "*"
        for c in criteria_and:
            value = str(c.get("value", ""))
            if c.get("field") != attribute or "/" in value or "," in value:
                continue
            if c.get("operator") == "equals":
                segment = value
                break
            if c.get("operator") == "starts_with":
                segment = value + "*"
                break
        path = path.replace("{" + name + "}", segment)
    return path


def other_routes(patterns: Sequence[str], methods: Iterable[str], own: Iterable[ObjectRoute]) -> list[str]:
    """Paths of the other routes (for these methods) that a pattern could reach — `*` matches any run of
    characters, `/` included — as patterns (`{param}` as `*`), for a grant to exclude them."""
    heads = [p.split("*", 1)[0] for p in patterns]
    wanted = {m.upper() for m in methods}
    mine = {r.template for r in own}
    out: list[str] = []
    for r in _all_routes():
        if r.method not in wanted or r.template in mine:
            continue
        head = r.template.split("{", 1)[0]
        if any(head.startswith(h) or h.startswith(head) for h in heads):
            text = _PARAM.sub("*", r.template)
            if text not in out and text not in patterns:
                out.append(text)
    return out
