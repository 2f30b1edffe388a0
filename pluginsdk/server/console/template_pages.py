"""Template pages beyond the listing: edit (with validate before saving), delete, and import from JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pydantic.alias_generators import to_snake
from starlette.responses import Response

from ...errors import PermissionDeniedError, SDKError, ValidationError
from ...files import parse_json
from ._html import Safe, join, render, value_of
from .pages import back, confirm_first, danger_form, field, fields_table, notice, page, request_form, table

if TYPE_CHECKING:
    from ._web import Ctx

__all__ = ["ROUTES"]

MAX_IMPORT = 200
"""Most templates one import takes."""
_TEXT = ("name", "description", "image_id", "instance_type")
_EXAMPLE = '[{"template_id": "web-small", "image_id": "img-1", "instance_type": "small", "max_number": 10}]'


def _edited(ctx: Ctx) -> dict[str, Any]:
    """The edit form's fields as the operation's input (an empty text field is left unchanged)."""
    data: dict[str, Any] = {k: ctx.value(k) for k in _TEXT if ctx.value(k)}
    if ctx.value("max_number"):
        try:
            data["max_number"] = int(ctx.value("max_number"))
        except ValueError:
            raise ValidationError(
                "Max machines must be a whole number.",
                details={"field": "max_number", "value": None, "expected": "an integer"},
            ) from None
    if ctx.value("tags"):
        data["tags"] = _json(ctx.value("tags"), "tags")
    return data


def _json(text: str, name: str) -> Any:
    try:
        return parse_json(text)
    except ValueError as exc:
        raise ValidationError(
            f"{name} is not valid JSON: {exc.args[0] if exc.args else exc}",
            details={"field": name, "value": None, "expected": "JSON"},
        ) from None


def _verdict(result: Any) -> Safe:
    problems = [("error", e) for e in result.validation_errors] + [("warning", w) for w in result.validation_warnings]
    return render(
        '<section class="card" role="status" aria-labelledby="valid-h"><h2 id="valid-h">Validation: {v}</h2>{t}'
        "<p>Nothing is saved by validating.</p></section>",
        v="valid" if result.valid else "not valid",
        t=table(("Kind", "Message"), problems, "Problems"),
    )


async def template_form(ctx: Ctx, template_id: str) -> Response:
    return await _template_page(ctx, template_id, Safe(""))


async def _template_page(ctx: Ctx, template_id: str, verdict: Safe) -> Response:
    found = (await ctx.call("get_template", {"template_id": template_id})).template
    posted = ctx.request.method == "POST"

    def current(name: str) -> Any:
        return ctx.value(name) if posted else getattr(found, name)

    tags = ctx.value("tags") if posted else json.dumps(found.tags, ensure_ascii=False)
    body = render(
        "{n}{v}<p>{where}</p>{fields}",
        n=notice(ctx),
        v=verdict,
        where=await _launched_by(ctx, found),
        fields=fields_table(found),
    )
    if ctx.can("update_template") or ctx.can("validate_template"):
        save = Safe('<button type="submit" name="action" value="save">Save template</button>')
        check = Safe('<button type="submit" name="action" value="validate">Validate</button> ')
        body = render(
            '{b}<form method="post" action="/ui/templates/{i}" class="card">{csrf}{f}'
            '<label for="f-tags">Tags (JSON object)</label><textarea id="f-tags" name="tags" rows="2">{tags}</textarea>'
            "{check}{save}</form>",
            b=body,
            i=quote(template_id, safe=""),
            csrf=ctx.csrf,
            f=join(
                [
                    field("Name", "name", current("name") or ""),
                    field("Description", "description", current("description") or ""),
                    field("Image id", "image_id", current("image_id"), required=True),
                    field("Instance type", "instance_type", current("instance_type") or ""),
                    field("Max machines", "max_number", current("max_number") or "", "number"),
                ]
            ),
            tags=value_of(tags),
            check=check if ctx.can("validate_template") else Safe(""),
            save=save if ctx.can("update_template") else Safe(""),
        )
    if ctx.can("create_request"):
        body = render("{b}{r}", b=body, r=request_form(ctx, template_id))
    if ctx.can("delete_template"):
        action = f"/ui/templates/{quote(template_id, safe='')}/delete"
        body = render("{b}{f}", b=body, f=danger_form(ctx, action, "Delete template"))
    return page(ctx, f"Template {template_id}", body)


async def _launched_by(ctx: Ctx, found: Any) -> Safe:
    """Where the template comes from and what launches it: its provider instance and that instance's type where
    the caller may read the providers (the local provider simulates every provider API)."""
    source = "stored" if found.source == "store" else f"loaded from the file {found.source}"
    provider: Any = None
    if ctx.can("get_providers_status"):
        instances = (await ctx.call("get_providers_status", {})).providers
        wanted = found.provider
        provider = next((p for p in instances if (p.name == wanted if wanted else p.default)), None)
    if provider is None:
        return render(
            "This template is {s}; it launches through provider API {a} on {p}.",
            s=source,
            a=found.provider_api,
            p=f"the provider instance {found.provider}" if found.provider else "the default provider instance",
        )
    how = (
        render("it simulates the provider API {a}", a=found.provider_api)
        if provider.type == "local"
        else render("it calls the provider API {a}", a=found.provider_api)
    )
    return render(
        "This template is {s}. The provider instance {n} (type {t}{d}) launches its machines: {h}.",
        s=source,
        n=provider.name,
        t=provider.type,
        d=", the default" if provider.default and not found.provider else "",
        h=how,
    )


async def save_template(ctx: Ctx, template_id: str) -> Response:
    data = _edited(ctx)
    if ctx.value("action") == "validate":
        stored = (await ctx.call("get_template", {"template_id": template_id})).template
        config = {**stored.model_dump(mode="json", exclude={"source"}), **data}
        result = await ctx.call("validate_template", {"template_config": config})
        return await _template_page(ctx, template_id, _verdict(result))
    await ctx.call("update_template", {"template_id": template_id, **data})
    return back(f"/ui/templates/{quote(template_id, safe='')}", f"Saved template {template_id}.")


async def delete_template(ctx: Ctx, template_id: str) -> Response:
    asked = confirm_first(
        ctx,
        "delete_template",
        f"Delete template {template_id}?",
        f"Template {template_id} will be deleted: no new request can use it. Machines it launched keep running.",
        button="Delete template",
        back_to=f"/ui/templates/{quote(template_id, safe='')}",
    )
    if asked is not None:
        return asked
    await ctx.call("delete_template", {"template_id": template_id})
    return back("/ui/templates", f"Deleted template {template_id}.")


# -- import -----------------------------------------------------------------------------
def _entries(text: str) -> list[dict[str, Any]]:
    """The templates in an import: one object, a list of them, or {"templates": [...]} (keys snake or camel)."""
    doc = _json(text, "templates")
    if isinstance(doc, dict) and isinstance(doc.get("templates"), list):
        doc = doc["templates"]
    entries = doc if isinstance(doc, list) else [doc]
    if not entries or len(entries) > MAX_IMPORT or not all(isinstance(e, dict) for e in entries):
        raise ValidationError(
            f"An import is 1 to {MAX_IMPORT} template objects.",
            details={"field": "templates", "value": None, "expected": f"1-{MAX_IMPORT} JSON objects"},
        )
    return [{to_snake(k): v for k, v in e.items()} for e in entries]


async def import_form(ctx: Ctx) -> Response:
    return await _import_page(ctx, Safe(""))


async def _import_page(ctx: Ctx, outcome: Safe) -> Response:
    parts = [
        notice(ctx),
        outcome,
        render(
            '<p>Paste one template, a list of templates, or a templates file\'s JSON ({{"templates": [...]}}). '
            "<strong>Validate</strong> checks each one and stores nothing; <strong>Import</strong> creates each "
            "one that is valid (at most {n}).</p>",
            n=MAX_IMPORT,
        ),
    ]
    if ctx.can("create_template") or ctx.can("validate_template"):
        parts.append(
            render(
                '<form method="post" action="/ui/template-import" class="card">{csrf}'
                '<label for="f-templates">Templates (JSON)</label>'
                '<textarea id="f-templates" name="templates" rows="10" required placeholder="{ex}">{t}</textarea>'
                "{check}{save}</form>",
                csrf=ctx.csrf,
                ex=_EXAMPLE,
                t=value_of(ctx.value("templates")),
                check=Safe('<button type="submit" name="action" value="validate">Validate</button> ')
                if ctx.can("validate_template")
                else Safe(""),
                save=Safe('<button type="submit" name="action" value="import">Import templates</button>')
                if ctx.can("create_template")
                else Safe(""),
            )
        )
    if ctx.can("refresh_templates"):
        parts.append(
            render(
                '<form method="post" action="/ui/template-import/refresh" class="inline">{csrf}'
                '<button type="submit">Reload the template files</button></form>',
                csrf=ctx.csrf,
            )
        )
    return page(ctx, "Import templates", join(parts))


async def run_import(ctx: Ctx) -> Response:
    validating = ctx.value("action") == "validate"
    operation = "validate_template" if validating else "create_template"
    if not ctx.can(operation):  # refused whole, as the backend would refuse each entry
        raise PermissionDeniedError(
            f"You may not call {operation}.", details={"field": "action", "value": operation, "expected": None}
        )
    entries = _entries(ctx.value("templates"))
    rows = []
    for entry in entries:
        name = str(entry.get("template_id", "(no id)"))
        try:
            if validating:
                result = await ctx.call("validate_template", {"template_config": entry})
                problems = [*result.validation_errors, *result.validation_warnings]
                rows.append((name, "valid" if result.valid else "not valid", "; ".join(problems)))
            else:
                await ctx.call("create_template", entry)
                rows.append((name, "created", ""))
        except SDKError as err:
            rows.append((name, f"refused ({err.http_status})", err.message))
    caption = "Validation (nothing stored)" if validating else "Import"
    outcome = render(
        '<section class="card" role="status">{t}</section>', t=table(("Template", "Outcome", "Detail"), rows, caption)
    )
    return await _import_page(ctx, outcome)


async def refresh(ctx: Ctx) -> Response:
    result = await ctx.call("refresh_templates", {})
    return back("/ui/template-import", f"Reloaded the template files: {result.template_count} templates.")


_ID = "[^/]{1,255}"
ROUTES = (
    ("GET", f"/templates/(?P<template_id>{_ID})", template_form),
    ("POST", f"/templates/(?P<template_id>{_ID})", save_template),
    ("POST", f"/templates/(?P<template_id>{_ID})/delete", delete_template),
    ("GET", "/template-import", import_form),
    ("POST", "/template-import", run_import),
    ("POST", "/template-import/refresh", refresh),
)
