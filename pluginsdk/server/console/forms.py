"""The generic view of any operation with a REST binding: a form derived from its input schema, and its result.

Scalar fields get an input of their JSON type; any other field takes JSON. An operation the caller may not
call is neither listed nor run (the backend refuses it in any case).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import PermissionDeniedError, ValidationError
from ...files import InputTooLargeError, parse_json
from ...operations import CATALOG
from ..limits import RouteNotFound
from ._html import Safe, join, render, value_of

if TYPE_CHECKING:
    from ._web import Ctx

__all__ = ["generic_form", "generic_values", "operations_index"]

_SCALAR = {"string": "text", "integer": "number", "number": "number"}


def _spec(ctx: Ctx, name: str) -> Any:
    spec = CATALOG.get(name)
    if spec is None or spec.rest is None:
        raise RouteNotFound(
            "No operation has this name.", details={"field": "name", "value": name[:64], "expected": None}
        )
    if not ctx.can(name):
        raise PermissionDeniedError(
            "You may not call this operation.", details={"field": "name", "value": name, "expected": None}
        )
    return spec


def operations_index(ctx: Ctx) -> Safe:
    rows = join(
        render('<li><a href="/ui/ops/{n}">{n}</a> — {s}</li>', n=name, s=spec.summary)
        for name, spec in sorted(CATALOG.items())
        if spec.rest is not None and ctx.can(name)
    )
    return render(
        '<p>Every operation you may call, with a form derived from its schema.</p><ul class="ops">{r}</ul>', r=rows
    )


def _kind(prop: dict[str, Any]) -> str:
    types = [prop.get("type")] + [o.get("type") for o in prop.get("anyOf", [])]
    for t in types:
        if t == "boolean":
            return "checkbox"
        if t in _SCALAR:
            return _SCALAR[t]
    return "json"


def generic_form(ctx: Ctx, name: str, result: Safe) -> Safe:
    spec = _spec(ctx, name)
    schema = spec.input_schema()
    required = set(schema.get("required", []))
    rows = []
    properties = schema.get("properties", {})
    for fname in sorted(properties, key=lambda n: n not in required):  # the required fields first
        prop = properties[fname]
        kind, label = _kind(prop), f"{fname}{' *' if fname in required else ''}"
        value = ctx.value(fname)
        if kind == "checkbox":
            rows.append(
                render(
                    '<label class="check"><input type="checkbox" id="f-{n}" name="{n}" value="true"{c}> {l}</label>',
                    n=fname,
                    l=label,
                    c=Safe(" checked") if value else Safe(""),
                )
            )
        elif kind == "json":
            rows.append(
                render(
                    '<label for="f-{n}">{l} (JSON)</label><textarea id="f-{n}" name="{n}" rows="2">{v}</textarea>',
                    n=fname,
                    l=label,
                    v=value_of(value),
                )
            )
        else:
            rows.append(
                render(
                    '<label for="f-{n}">{l}</label><input id="f-{n}" name="{n}" type="{k}" value="{v}">',
                    n=fname,
                    l=label,
                    k="text" if kind == "number" else kind,
                    v=value_of(value),
                )
            )
        if prop.get("description"):
            rows.append(render("<small>{d}</small>", d=str(prop["description"]).split("\n")[0]))
    return render(
        '<p>{doc}</p><p><code>{m} {r}</code></p><form method="post" action="/ui/ops/{n}" class="card">{csrf}{rows}'
        '<button type="submit">Run {n}</button></form>{result}',
        doc=spec.summary,
        m=spec.method,
        r=spec.route,
        n=name,
        csrf=ctx.csrf,
        rows=join(rows),
        result=result,
    )


def generic_values(ctx: Ctx, name: str) -> dict[str, Any]:
    """The operation's input from the form, each field converted to its JSON type."""
    spec = _spec(ctx, name)
    data: dict[str, Any] = {}
    for fname, prop in spec.input_schema().get("properties", {}).items():
        text = ctx.value(fname)
        kind = _kind(prop)
        if kind == "checkbox":
            if text:
                data[fname] = True
            continue
        if text == "":
            continue
        if kind in {"json", "number"}:
            try:
                data[fname] = parse_json(text)
            except InputTooLargeError as exc:  # JSON, but past the limit every door applies: not taken as text
                raise ValidationError(
                    f"{fname} is not valid JSON: {exc}", details={"field": fname, "value": None, "expected": "JSON"}
                ) from None
            except ValueError:
                if kind == "number":
                    raise ValidationError(
                        f"{fname} must be a number.", details={"field": fname, "value": None, "expected": "a number"}
                    ) from None
                data[fname] = text
        else:
            data[fname] = text
    return data
