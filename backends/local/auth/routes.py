"""Tier 1's subject: the concrete path a call arrived on, checked against the operation's own paths.

A REST request is authorized on the path it was sent to (`/api/v1/machines/request` as well as
`/api/v1/machines`: both serve `create_request`), so a deny or an allow written on either path bites.
The path must be one of the operation's paths (its template with non-empty segments in place of the
parameters), else the call is refused: a caller cannot borrow another route's permissions. When the
input normalised a path parameter (the path said `Ｔ1`, the operation holds `T1`), the path with the
operation's values is checked too, so no spelling of a path slips past a rule on the canonical one.
"""

from __future__ import annotations

import functools
import re

from pluginsdk.errors import PermissionDeniedError
from pluginsdk.operations import Operation, OperationSpec

__all__ = ["fill", "matches", "routes_to_check"]

_PARAM = re.compile(r"{(\w+)}")


@functools.lru_cache(maxsize=1024)
def _segments(template: str) -> tuple[str | None, ...]:
    """The template's segments, None where a `{name}` stands (parsed once per template)."""
    return tuple(None if _PARAM.fullmatch(w) else w for w in template.split("/"))


@functools.lru_cache(maxsize=1024)
def _pieces(template: str) -> tuple[tuple[str, str | None], ...]:
    """(literal text, parameter name or None) pieces of the template (parsed once per template)."""
    pieces: list[tuple[str, str | None]] = []
    at = 0
    for m in _PARAM.finditer(template):
        pieces.append((template[at : m.start()], m.group(1)))
        at = m.end()
    pieces.append((template[at:], None))
    return tuple(pieces)


def matches(template: str, path: str) -> bool:
    """Whether `path` is `template` with each `{name}` replaced by one non-empty segment."""
    want = _segments(template)
    got = path.split("/")
    if len(want) != len(got):
        return False
    for w, g in zip(want, got, strict=True):
        if w is None:
            if not g:
                return False
        elif w != g:
            return False
    return True


def fill(template: str, op: Operation) -> str:
    """The template with its parameters taken from the operation."""
    return "".join(
        text if name is None else text + str(getattr(op, name, "{" + name + "}")) for text, name in _pieces(template)
    )


def routes_to_check(spec: OperationSpec, op: Operation, route_path: str | None) -> list[str]:
    """The concrete paths tier 1 must allow (all of them) for this call."""
    if route_path is None:
        route = spec.route
        if route is None:
            raise _not_a_route(spec, None)
        return [route if "{" not in route else str(spec.concrete_route(op))]  # most routes have no parameter
    templates = spec.rest.paths if spec.rest is not None else ()
    for template in templates:
        if matches(template, route_path):
            out = [route_path]
            for extra in (fill(template, op), spec.concrete_route(op) if spec.policy.route else None):
                if extra is not None and extra not in out:
                    out.append(extra)
            return out
    raise _not_a_route(spec, route_path)


def _not_a_route(spec: OperationSpec, route_path: str | None) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"Not authorized: {spec.name} is not served on {route_path or 'any route'}.",
        details={"field": "route", "value": route_path, "expected": list(spec.rest.paths) if spec.rest else None},
    )
