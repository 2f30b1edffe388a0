"""The console's pages: each reads or changes state only through catalog operations run as the caller."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from starlette.responses import HTMLResponse, RedirectResponse, Response

from ...errors import PermissionDeniedError, SDKError, ValidationError
from ...words import counted
from ._html import Safe, join, render, value_of
from .forms import generic_form, generic_values, operations_index
from .live import audit_export, progress_events

if TYPE_CHECKING:
    from ._web import Ctx

__all__ = ["ROUTES", "back", "error_page", "layout", "request_form"]

_NAV = (
    ("/ui/", "Dashboard", "get_request_summary"),
    ("/ui/templates", "Templates", "list_templates"),
    ("/ui/requests", "Requests", "list_requests"),
    ("/ui/machines", "Machines", "list_machines"),
    ("/ui/constraints", "Constraints", "list_constraints"),
    ("/ui/roles", "Roles", "list_roles"),
    ("/ui/user-roles", "User roles", "list_user_roles"),
    ("/ui/users", "Users", "list_managed_users"),
    ("/ui/playground", "Playground", "explain_access"),
    ("/ui/keys", "My API keys", "list_my_api_keys"),
    ("/ui/mfa", "Authenticator", "setup_mfa"),
    ("/ui/api-keys", "All API keys", "list_api_keys"),
    ("/ui/audit", "Audit log", "list_audit_records"),
    ("/ui/ops", "Operations", None),
)
_TERMINAL = {"completed", "partial", "failed", "cancelled"}


def layout(ctx: Ctx | None, title: str, body: Safe) -> Safe:
    """The page around `body`: navigation limited to what the caller may open, and sign-out."""
    header = Safe("")
    if ctx is not None:
        links = join(
            render(
                '<li><a href="{h}"{cur}>{t}</a></li>',
                h=href,
                t=text,
                cur=Safe(' aria-current="page"') if ctx.request.url.path == href else Safe(""),
            )
            for href, text, op in _NAV
            if (op is None or ctx.can(op)) and _works_here(ctx, op)
        )
        header = render(
            '<header><nav aria-label="Main"><ul>{links}</ul></nav>'
            '<form method="post" action="/ui/logout" class="signout">{csrf}'
            '<span>{user}</span> <button type="submit">Sign out</button></form></header>',
            links=links,
            csrf=ctx.csrf,
            user=ctx.principal.user_id,
        )
    return render(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>{title} · pluginsdk</title><link rel="stylesheet" href="/ui/static/console.css">'
        '<link rel="icon" href="/ui/static/icon.svg"><script src="/ui/static/console.js" defer></script></head><body>'
        '<a class="skip" href="#main">Skip to content</a>{header}<main id="main"><h1>{title}</h1>{body}</main>'
        "</body></html>",
        title=title,
        header=header,
        body=body,
    )


def _works_here(ctx: Ctx, op: str | None) -> bool:
    """A page that cannot work in this configuration is not offered: the users' without the user pool, the
    authenticator's but to a password session."""
    if op == "list_managed_users":
        return ctx.pool
    if op == "setup_mfa":
        return ctx.pool and ctx.session.method == "password"
    return True


def page(ctx: Ctx, title: str, body: Safe, status: int = 200) -> Response:
    return HTMLResponse(layout(ctx, title, body), status_code=status, headers={"cache-control": "no-store"})


def error_page(ctx: Ctx, err: SDKError) -> Response:
    body = render('<p class="error" role="alert">{m}</p><p><a href="/ui/">Back to the dashboard</a></p>', m=err.message)
    return page(ctx, f"Refused ({err.http_status})", body, err.http_status)


def card_form(ctx: Ctx, action: str, fields: Any, button: str, title: str = "") -> Safe:
    """A POST form in a card, under an optional heading: the CSRF token, `fields`, then its submit button."""
    return render(
        '{h}<form method="post" action="{a}" class="card">{csrf}{f}<button type="submit">{b}</button></form>',
        h=render("<h2>{t}</h2>", t=title) if title else "",
        a=action,
        csrf=ctx.csrf,
        f=fields,
        b=button,
    )


def confirm_first(
    ctx: Ctx, operation: str, title: str, consequence: str, *, button: str, back_to: str
) -> Response | None:
    """None when the form carries its confirmation; else the page asking for it: the consequence, and the same
    form again (its fields kept) with `confirm` and a button naming the act, or the way back. Every destructive
    form goes through here, so neither a stray click nor a forged one-click POST acts; a caller who may not call
    `operation` is refused (403) at once, never asked."""
    if not ctx.can(operation):
        raise PermissionDeniedError(
            f"You may not call {operation}.", details={"field": "operation", "value": operation, "expected": None}
        )
    if ctx.value("confirm") == "yes":
        return None
    kept = join(
        render('<input type="hidden" name="{n}" value="{v}">', n=name, v=value_of(value))
        for name, values in ctx.form.items()
        if name not in ("csrf", "confirm")
        for value in values
    )
    body = render(
        '<p class="warning" role="alert">{c}</p><form method="post" action="{a}" class="inline">{csrf}{kept}'
        '<input type="hidden" name="confirm" value="yes"><button type="submit" class="danger">{b}</button>'
        '<a href="{back}">Go back, change nothing</a></form>',
        c=consequence,
        a=ctx.request.url.path,
        csrf=ctx.csrf,
        kept=kept,
        b=button,
        back=back_to,
    )
    return page(ctx, title, body)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str = "") -> Safe:
    head = join(render('<th scope="col">{h}</th>', h=h) for h in headers)
    body = join(render("<tr>{c}</tr>", c=join(render("<td>{v}</td>", v=v) for v in row)) for row in rows)
    if not body:
        return render('<p class="empty">{c}: none.</p>', c=caption or "Nothing")
    cap = render("<caption>{c}</caption>", c=caption) if caption else Safe("")
    return render(
        "<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>", cap=cap, head=head, body=body
    )


def fields_table(found: Any, exclude: frozenset[str] = frozenset()) -> Safe:
    """Every field of a read's answer (`model_dump`, as REST's GET answers it), objects and lists as JSON."""
    rows = []
    for name, value in found.model_dump(mode="json").items():
        if name in exclude:
            continue
        if value is None or value in ({}, []):
            shown: Any = "none"
        elif isinstance(value, dict | list):
            shown = render("<code>{j}</code>", j=json.dumps(value, ensure_ascii=False))
        else:
            shown = json.dumps(value) if isinstance(value, bool) else value  # true / false, as JSON says
        rows.append((name, shown))
    return table(("Field", "Value"), rows, "Fields")


def field(label: str, name: str, value: Any = "", kind: str = "text", required: bool = False) -> Safe:
    return render(
        '<label for="f-{n}">{label}</label><input id="f-{n}" name="{n}" type="{k}" value="{v}"{r}>',
        label=label,
        n=name,
        k=kind,
        v=value_of(value),
        r=Safe(" required") if required else Safe(""),
    )


def options(values: Iterable[str], selected: str) -> Safe:
    """`<option>`s of a select, `selected` marked."""
    return join(render("<option{s}>{o}</option>", o=o, s=_flag(o == selected, "selected")) for o in values)


def choices(kind: str, name: str, values: Iterable[str], chosen: Sequence[str]) -> Safe:
    """Labelled checkboxes or radio buttons, those in `chosen` checked."""
    return join(
        render(
            '<label class="check"><input type="{k}" name="{n}" value="{v}"{c}> {v}</label>',
            k=kind,
            n=name,
            v=value,
            c=_flag(value in chosen, "checked"),
        )
        for value in values
    )


def _flag(on: bool, attribute: str) -> Safe:
    return Safe(f" {attribute}") if on else Safe("")


def link(href: str, text: Any) -> Safe:
    return render('<a href="{h}">{t}</a>', h=href, t=text)


def notice(ctx: Ctx) -> Safe:
    done = ctx.query("done")
    return render('<p class="notice" role="status">{d}</p>', d=done) if done else Safe("")


def _int(text: str, default: int, low: int = 0, high: int = 10000) -> int:
    try:
        return max(low, min(high, int(text)))
    except ValueError:
        return default


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json") if hasattr(model, "model_dump") else model


def pre(value: Any) -> Safe:
    return render("<pre>{j}</pre>", j=json.dumps(_dump(value), indent=2, ensure_ascii=False, default=str))


# -- dashboard --------------------------------------------------------------------------
async def dashboard(ctx: Ctx) -> Response:
    parts: list[Safe] = []
    if ctx.can("get_request_summary"):
        summary = await ctx.call("get_request_summary", {})
        parts.append(table(("State", "Machines"), sorted(summary.machines_by_status.items()), "Machines by state"))
        parts.append(table(("State", "Requests"), sorted(summary.by_status.items()), "Requests by state"))
    if ctx.can("list_active_requests"):
        active = await ctx.call("list_active_requests", {"limit": 50})
        rows = [
            (link(f"/ui/requests/{quote(r.request_id)}", r.request_id), r.template_id, r.status, r.count)
            for r in active.requests
        ]
        parts.append(table(("Request", "Template", "State", "Machines"), rows, "Requests in flight"))
    if ctx.can("get_providers_status"):
        parts.extend(_capacity(await ctx.call("get_providers_status", {})))
    return page(ctx, "Dashboard", join(parts))


def _capacity(status: Any) -> list[Safe]:
    """The dashboard's provider instances with the machines each holds, the launch candidates the capacity
    memory is holding back (cooling down or probing; recovered ones are not shown), and the templates their
    bootstrap failures protect (no new launches until an operator clears them)."""
    providers = [(p.name, p.type, "yes" if p.default else "", p.active_machines) for p in status.providers]
    held = [
        (o.key, o.state, o.failures, o.cooldown_until.isoformat() if o.cooldown_until else "", o.last_reason or "")
        for o in status.offerings
        if o.state != "closed"
    ]
    return [
        table(("Provider", "Type", "Default", "Machines"), providers, "Machines by provider"),
        table(("Candidate", "State", "Failures in a row", "Skipped until", "Last reason"), held, "Capacity"),
        table(("Template", "Reason"), sorted(status.protected.items()), "Protected templates"),
    ]


# -- templates --------------------------------------------------------------------------
async def templates(ctx: Ctx) -> Response:
    offset = _int(ctx.query("offset"), 0)
    listing = await ctx.call("list_templates", {"limit": 50, "offset": offset})
    rows = [
        (
            link(f"/ui/templates/{quote(t.template_id, safe='')}", t.template_id),
            t.name,
            t.image_id,
            t.instance_type,
            t.max_number,
        )
        for t in listing.templates
    ]
    parts = [
        notice(ctx),
        Safe('<p><a href="/ui/template-import">Import or validate templates</a></p>'),
        table(("Id", "Name", "Image", "Instance type", "Max"), rows, "Templates"),
        _pager(ctx, offset, len(rows), 50),
    ]
    if ctx.can("create_template"):
        parts.append(
            card_form(
                ctx,
                "/ui/templates",
                join(
                    [
                        field("Template id", "template_id", required=True),
                        field("Name", "name"),
                        field("Image id", "image_id", required=True),
                        field("Instance type", "instance_type", "small"),
                        field("Max machines", "max_number", 10, "number"),
                    ]
                ),
                "Create template",
                "Create a template",
            )
        )
    return page(ctx, "Templates", join(parts))


def _pager(ctx: Ctx, offset: int, shown: int, size: int) -> Safe:
    links = []
    if offset > 0:
        links.append(link(f"{ctx.request.url.path}?offset={max(0, offset - size)}", "Previous page"))
    if shown >= size:
        links.append(link(f"{ctx.request.url.path}?offset={offset + size}", "Next page"))
    return render('<nav class="pager" aria-label="Pages">{l}</nav>', l=join(links, " ")) if links else Safe("")


async def create_template(ctx: Ctx) -> Response:
    data: dict[str, Any] = {
        k: ctx.value(k) for k in ("template_id", "name", "image_id", "instance_type") if ctx.value(k)
    }
    data["max_number"] = _int(ctx.value("max_number"), 10, 1, 100000)
    data.setdefault("name", data.get("template_id", ""))
    created = await ctx.call("create_template", data)
    return back("/ui/templates", f"Created template {getattr(created, 'template_id', data.get('template_id'))}.")


def back(path: str, done: str) -> Response:
    return RedirectResponse(f"{path}?done={quote(done)}", status_code=303)


# -- requests ---------------------------------------------------------------------------
async def requests(ctx: Ctx) -> Response:
    offset = _int(ctx.query("offset"), 0)
    listing = await ctx.call("list_requests", {"limit": 50, "offset": offset})
    rows = [
        (link(f"/ui/requests/{quote(r.request_id)}", r.request_id), r.request_type, r.template_id, r.status, r.count)
        for r in listing.requests
    ]
    parts = [
        notice(ctx),
        table(("Request", "Kind", "Template", "State", "Machines"), rows, "Requests"),
        _pager(ctx, offset, len(rows), 50),
    ]
    if ctx.can("create_request"):
        parts.append(request_form(ctx, ""))
    return page(ctx, "Requests", join(parts))


def request_form(ctx: Ctx, template_id: str) -> Safe:
    """The form requesting machines; the template by id (a listing of every template would cost a page's
    time with thousands of them: each template's page offers this form with its id filled in)."""
    fields = [
        field("Template id", "template_id", template_id, required=True),
        field("Machines", "requested_count", 1, "number", True),
    ]
    return card_form(ctx, "/ui/requests", join(fields), "Request machines", "Request machines")


async def create_request(ctx: Ctx) -> Response:
    data = {"template_id": ctx.value("template_id"), "requested_count": _int(ctx.value("requested_count"), 1, 1, 10000)}
    created = await ctx.call("create_request", data)
    return RedirectResponse(f"/ui/requests/{quote(created.request_id)}", status_code=303)


async def request_detail(ctx: Ctx, request_id: str) -> Response:
    body = render(
        '{n}<section id="progress" data-events="/ui/requests/{i}/events" data-poll="/ui/requests/{i}/progress" '
        'aria-live="polite">{p}</section>',
        n=notice(ctx),
        i=quote(request_id, safe=""),
        p=await _progress(ctx, request_id),
    )
    if ctx.can("cancel_request") and 'data-final="1"' not in body:  # a final request cannot be cancelled
        body = render(
            "{b}{f}", b=body, f=danger_form(ctx, f"/ui/requests/{quote(request_id, safe='')}/cancel", "Cancel request")
        )
    return page(ctx, f"Request {request_id}", body)


def danger_form(ctx: Ctx, action: str, label: str) -> Safe:
    """A one-button form posting to `action` (already quoted) whose handler asks first (`confirm_first`)."""
    return render(
        '<form method="post" action="{a}" class="inline">{csrf}'
        '<button type="submit" class="danger">{l}</button></form>',
        a=action,
        csrf=ctx.csrf,
        l=label,
    )


async def cancel_request(ctx: Ctx, request_id: str) -> Response:
    here = f"/ui/requests/{quote(request_id, safe='')}"
    asked = confirm_first(
        ctx,
        "cancel_request",
        f"Cancel request {request_id}?",
        f"Request {request_id} stops: its machines not yet running are terminated; running ones keep running "
        "(return them from the Machines page).",
        button="Cancel request",
        back_to=here,
    )
    if asked is not None:
        return asked
    result = await ctx.call("cancel_request", {"request_id": request_id})
    return back(here, getattr(result, "message", "") or f"Cancelled request {request_id}.")


async def request_progress(ctx: Ctx, request_id: str) -> Response:
    return HTMLResponse(await _progress(ctx, request_id), headers={"cache-control": "no-store"})


async def request_events(ctx: Ctx, request_id: str) -> Response:
    return await progress_events(ctx, request_id, lambda: _progress(ctx, request_id))


async def _progress(ctx: Ctx, request_id: str) -> Safe:
    found = await ctx.call("get_request", {"request_id": request_id})
    machines = []
    if ctx.can("list_machines"):
        machines = (await ctx.call("list_machines", {"request_id": request_id, "limit": 1000})).machines
    rows = [(m.machine_id, m.name, m.status, m.ip_address) for m in machines]
    final = str(found.status) in _TERMINAL
    return render(
        '<div data-state="{s}"{final}><p>State: <strong class="state">{s}</strong> — {m}</p>{t}{f}</div>',
        s=str(found.status),
        m=found.message,
        final=Safe(' data-final="1"') if final else Safe(""),
        t=table(("Machine", "Name", "State", "Address"), rows, "Machines"),
        f=fields_table(found, frozenset({"machines"})),
    )


# -- machines ---------------------------------------------------------------------------
async def machines(ctx: Ctx) -> Response:
    status, offset = ctx.query("status"), _int(ctx.query("offset"), 0)
    data: dict[str, Any] = {"limit": 100, "offset": offset}
    if status:
        data["status"] = status
    listing = await ctx.call("list_machines", data)
    can_return = ctx.can("create_return_request")

    def pick(machine_id: str) -> Safe:
        return render('<input type="checkbox" name="machine_ids" value="{i}" aria-label="Select {i}">', i=machine_id)

    rows = [
        ((pick(m.machine_id),) if can_return else ()) + (m.machine_id, m.name, m.template_id, m.status, m.ip_address)
        for m in listing.machines
    ]
    headers = (("Select",) if can_return else ()) + ("Machine", "Name", "Template", "State", "Address")
    filt = render(
        '<form method="get" action="/ui/machines" class="inline">{f}<button type="submit">Filter</button></form>',
        f=field("State", "status", status),
    )
    listing_html = table(headers, rows, "Machines")
    if can_return and rows:
        listing_html = render(
            '<form method="post" action="/ui/machines/return">{csrf}{t}'
            '<button type="submit">Return selected</button></form>',
            csrf=ctx.csrf,
            t=listing_html,
        )
    return page(ctx, "Machines", join([notice(ctx), filt, listing_html, _pager(ctx, offset, len(rows), 100)]))


async def return_machines(ctx: Ctx) -> Response:
    ids = [i for i in ctx.values("machine_ids") if i]
    if not ids:
        raise ValidationError(
            "Select at least one machine.", details={"field": "machine_ids", "value": None, "expected": "machine ids"}
        )
    asked = confirm_first(
        ctx,
        "create_return_request",
        f"Return {counted(len(ids), 'machine')}?",
        f"These machines are terminated and given back to the provider: {', '.join(ids)}.",
        button="Return machines",
        back_to="/ui/machines",
    )
    if asked is not None:
        return asked
    result = await ctx.call("create_return_request", {"machine_ids": ids})
    return back("/ui/machines", f"Return requested: {', '.join(result.created_request_ids or []) or result.message}.")


# -- constraints, what-if, playground ----------------------------------------------------
async def constraints(ctx: Ctx) -> Response:
    return await _constraints_page(ctx, Safe(""))


async def _constraints_page(ctx: Ctx, preview: Safe, status: int = 200) -> Response:
    listing = await ctx.call("list_constraints", {"page_size": 100, "starting_token": ctx.query("next") or None})
    page_data = listing.message
    rows = [
        (
            c.constraint_id,
            c.name,
            c.object_type,
            "; ".join(f"{r.field} {r.operator} {r.value}" for r in [*c.criteria_and, *c.criteria_or]),
            "; ".join(f"{g.group_id}:{g.permission}:{g.permission_type}" for g in c.group_permissions),
        )
        for c in page_data.items
    ]
    parts = [notice(ctx), preview, table(("Id", "Name", "Object type", "Criteria", "Roles"), rows, "Constraints")]
    if getattr(page_data, "next_token", None):
        parts.append(link(f"/ui/constraints?next={quote(page_data.next_token)}", "Next page"))
    if ctx.can("create_constraint"):
        parts.append(await _constraint_editor(ctx))
    return page(ctx, "Constraints", join(parts), status)


async def _constraint_editor(ctx: Ctx) -> Safe:
    """The constraint form, its object types, fields and operators from `permissionObjects`."""
    v = ctx.value
    fields: dict[str, list[str]] = {"api": ["route__path"]}
    operators: list[str] = ["equals"]
    if ctx.can("get_permission_objects"):
        objects = (await ctx.call("get_permission_objects", {})).message
        fields = {o.value: [f.value for f in o.fields] for o in objects.object_types} or fields
        operators = [o.value for o in objects.operators] or operators
    chosen = v("object_type", "api")
    type_options = join(
        render('<option data-fields="{f}"{s}>{t}</option>', t=t, f=" ".join(names), s=_flag(t == chosen, "selected"))
        for t, names in fields.items()
    )
    field_options = join(render('<option value="{f}"></option>', f=f) for f in fields.get(chosen, []))
    return render(
        '<h2>Write a constraint</h2><form method="post" action="/ui/constraints" class="card">{csrf}'
        "{cid}{name}"
        '<label for="f-object_type">Object type</label><select id="f-object_type" name="object_type">{types}</select>'
        '<label for="f-field">Field</label><input id="f-field" name="field" list="field-names" value="{fld}" required>'
        '<datalist id="field-names">{field_options}</datalist>'
        '<label for="f-operator">Operator</label><select id="f-operator" name="operator">{ops}</select>{val}{role}'
        "<fieldset><legend>Methods</legend>{methods}</fieldset><fieldset><legend>Effect</legend>{kinds}</fieldset>"
        '<button type="submit" name="action" value="preview">Preview (what-if)</button> '
        '<button type="submit" name="action" value="save">Save constraint</button></form>',
        csrf=ctx.csrf,
        cid=field("Constraint id", "constraint_id", v("constraint_id"), required=True),
        name=join([field("Name", "name", v("name")), field("Description", "description", v("description"))]),
        types=type_options,
        fld=v("field", "route__path"),
        field_options=field_options,
        ops=options(operators, v("operator", "equals")),
        val=field("Value", "value", v("value")),
        role=field("Role", "role", v("role"), required=True),
        methods=choices("checkbox", "methods", ("GET", "POST", "PUT", "DELETE"), ctx.values("methods") or ["GET"]),
        kinds=choices("radio", "kind", ("allow", "deny"), [v("kind", "allow")]),
    )


def _candidate(ctx: Ctx) -> dict[str, Any]:
    v = ctx.value
    return {
        "constraint_id": v("constraint_id"),
        "name": v("name") or v("constraint_id"),
        "description": v("description") or f"Written in the console: {v('name') or v('constraint_id')}",
        "object_type": v("object_type", "api"),
        "criteria_and": [{"field": v("field"), "operator": v("operator", "equals"), "value": v("value")}],
        "group_permissions": [
            {"groupId": v("role"), "permission": m, "permissionType": v("kind", "allow")}
            for m in (ctx.values("methods") or ["GET"])
        ],
    }


def preview_query(candidate: dict[str, Any]) -> dict[str, Any]:
    """The what-if the constraint preview runs: the candidate added, compared on every API route and on the
    objects of every type the policy names (`policy_objects`), as `POST /auth/whatIf` with the same body."""
    return {"add_constraints": [candidate], "policy_objects": True, "limit": 200}


async def save_constraint(ctx: Ctx) -> Response:
    candidate = _candidate(ctx)
    if ctx.value("action") == "preview":
        report = await ctx.call("what_if", preview_query(candidate))
        rows = [(c.subject, c.method, c.target, "allowed" if c.after else "denied") for c in report.changes]
        summary = render(
            '<section class="card preview" aria-labelledby="preview-h"><h2 id="preview-h">What-if preview</h2>'
            "<p>{a} would change from allowed to denied, {d} from denied to allowed "
            "({s} × {q}). Nothing is saved yet.</p>{t}</section>",
            a=counted(report.allowed_to_denied, "decision"),
            d=report.denied_to_allowed,
            s=counted(report.subjects, "subject"),
            q=counted(report.questions, "question"),
            t=table(("Subject", "Method", "Route or object", "Becomes"), rows, "Changed decisions"),
        )
        return await _constraints_page(ctx, summary)
    await ctx.call("create_constraint", candidate)
    return back("/ui/constraints", f"Saved constraint {candidate['constraint_id']}.")


async def playground(ctx: Ctx) -> Response:
    v = ctx.value
    result = Safe("")
    if ctx.request.method == "POST":
        attributes: dict[str, str] = {}
        for line in v("attributes").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip():
                attributes[key.strip()] = value.strip()
        data: dict[str, Any] = {
            "object_type": v("object_type", "api"),
            "attributes": attributes,
            "method": v("method", "GET"),
        }
        if v("user_id"):
            data["user_id"] = v("user_id")
        if v("roles"):
            data["roles"] = [r.strip() for r in v("roles").split(",") if r.strip()]
        explained = await ctx.call("explain_access", data)
        reasons = [(r.kind, r.constraint_id, r.via, r.detail) for r in explained.reasons]
        result = render(
            '<section class="card" aria-labelledby="decision-h">'
            '<h2 id="decision-h">Decision: <span class="decision">{d}</span></h2>{t}</section>',
            d="ALLOW" if explained.allowed else "DENY",
            t=table(("Kind", "Constraint", "Via", "Detail"), reasons, "Reasons"),
        )
    form = render(
        '<form method="post" action="/ui/playground" class="card">{csrf}{user}{roles}{otype}'
        '<label for="f-method">Method</label><select id="f-method" name="method">{methods}</select>'
        '<label for="f-attributes">Attributes (one name=value a line)</label>'
        '<textarea id="f-attributes" name="attributes" rows="3">{attrs}</textarea>'
        '<button type="submit">Explain</button></form>{result}',
        csrf=ctx.csrf,
        user=field("User id", "user_id", v("user_id")),
        roles=field("Or roles (comma-separated)", "roles", v("roles")),
        otype=field("Object type", "object_type", v("object_type", "api")),
        methods=join(
            render("<option{s}>{m}</option>", m=m, s=Safe(" selected") if m == v("method", "GET") else Safe(""))
            for m in ("GET", "POST", "PUT", "DELETE")
        ),
        attrs=value_of(v("attributes", "route__path=/api/v1/templates")),
        result=result,
    )
    return page(ctx, "Check and explain", form)


# -- API keys ---------------------------------------------------------------------------
async def keys(ctx: Ctx) -> Response:
    return await _keys_page(ctx, Safe(""))


async def _keys_page(ctx: Ctx, created: Safe) -> Response:
    listing = await ctx.call("list_my_api_keys", {})
    can_delete = ctx.can("delete_my_api_key")

    def remove(key_id: str) -> Safe:
        if not can_delete:
            return Safe("")
        return render(
            '<form method="post" action="/ui/keys/{i}/delete" class="inline">{csrf}'
            '<button type="submit" aria-label="Delete key {i}">Delete</button></form>',
            i=key_id,
            csrf=ctx.csrf,
        )

    rows = [
        (k.api_key_id, k.api_key_name, k.description, k.expires_at or "never", remove(k.api_key_id))
        for k in listing.items
    ]
    parts = [notice(ctx), created, table(("Id", "Name", "Description", "Expires", "Actions"), rows, "My API keys")]
    if ctx.can("create_my_api_key"):
        parts.append(
            card_form(
                ctx,
                "/ui/keys",
                join(
                    [
                        field("Name", "api_key_name", required=True),
                        field("Description", "description"),
                        field("Expires on", "expires_at", _in_days(90), "date", True),
                    ]
                ),
                "Create key",
                "Create a key",
            )
        )
    return page(ctx, "My API keys", join(parts))


async def create_key(ctx: Ctx) -> Response:
    created = await ctx.call(
        "create_my_api_key",
        {
            "api_key_name": ctx.value("api_key_name"),
            "description": ctx.value("description") or "Created in the console",
            "expires_at": ctx.value("expires_at"),
        },
    )
    shown = render(
        '<section class="card secret" role="status"><h2>Key {n} created</h2>'
        '<p>Copy the secret now: it is shown only once.</p><p><code id="secret">{s}</code></p></section>',
        n=created.api_key_name,
        s=created.api_key,
    )
    return await _keys_page(ctx, shown)


async def delete_key(ctx: Ctx, key_id: str) -> Response:
    asked = confirm_first(
        ctx,
        "delete_my_api_key",
        f"Delete key {key_id}?",
        f"Key {key_id} is revoked for good: every client using it is refused from now on.",
        button="Delete key",
        back_to="/ui/keys",
    )
    if asked is not None:
        return asked
    await ctx.call("delete_my_api_key", {"api_key_id": key_id})
    return back("/ui/keys", f"Deleted key {key_id}.")


def _in_days(days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).date().isoformat()


# -- audit ------------------------------------------------------------------------------
_AUDIT_FILTERS = ("actor", "action", "target_type", "target_id", "since", "until")


async def audit(ctx: Ctx) -> Response:
    filters = {k: ctx.query(k) for k in _AUDIT_FILTERS if ctx.query(k)}
    data: dict[str, Any] = {**filters, "page_size": 100}
    if ctx.query("next"):
        data["starting_token"] = ctx.query("next")
    listing = await ctx.call("list_audit_records", data)
    rows = [(getattr(r, "at", ""), r.actor, r.action, r.target_type, r.target_id) for r in listing.records]
    form = render(
        '<form method="get" action="/ui/audit" class="inline">{a}{b}{c}<button type="submit">Filter</button></form>',
        a=field("Actor", "actor", filters.get("actor", "")),
        b=field("Action", "action", filters.get("action", "")),
        c=field("Target type", "target_type", filters.get("target_type", "")),
    )
    export = render(
        '<p><a href="/ui/audit/export{q}" download="audit.jsonl">Export these records as JSON lines</a></p>',
        q="?" + urlencode(filters) if filters else "",
    )
    parts = [notice(ctx), form, export]
    parts.append(table(("When", "Actor", "Action", "Target type", "Target"), rows, "Audit records"))
    if listing.next_token:
        parts.append(link(f"/ui/audit?{urlencode({**filters, 'next': listing.next_token})}", "Next page"))
    return page(ctx, "Audit log", join(parts))


async def audit_jsonl(ctx: Ctx) -> Response:
    return await audit_export(ctx, {k: ctx.query(k) for k in _AUDIT_FILTERS if ctx.query(k)})


# -- the generic view of any operation --------------------------------------------------
async def ops(ctx: Ctx) -> Response:
    return page(ctx, "Operations", operations_index(ctx))


async def op_form(ctx: Ctx, name: str) -> Response:
    return page(ctx, name, generic_form(ctx, name, Safe("")))


async def op_run(ctx: Ctx, name: str) -> Response:
    result = await ctx.call(name, generic_values(ctx, name))
    return page(
        ctx, name, generic_form(ctx, name, render('<section class="card"><h2>Result</h2>{r}</section>', r=pre(result)))
    )


ROUTES = (
    ("GET", "/", dashboard),
    ("GET", "/templates", templates),
    ("POST", "/templates", create_template),
    ("GET", "/requests", requests),
    ("POST", "/requests", create_request),
    ("GET", "/requests/(?P<request_id>[^/]{1,200})", request_detail),
    ("GET", "/requests/(?P<request_id>[^/]{1,200})/progress", request_progress),
    ("GET", "/requests/(?P<request_id>[^/]{1,200})/events", request_events),
    ("POST", "/requests/(?P<request_id>[^/]{1,200})/cancel", cancel_request),
    ("GET", "/machines", machines),
    ("POST", "/machines/return", return_machines),
    ("GET", "/constraints", constraints),
    ("POST", "/constraints", save_constraint),
    ("GET", "/playground", playground),
    ("POST", "/playground", playground),
    ("GET", "/keys", keys),
    ("POST", "/keys", create_key),
    ("POST", "/keys/(?P<key_id>[^/]{1,200})/delete", delete_key),
    ("GET", "/audit", audit),
    ("GET", "/audit/export", audit_jsonl),
    ("GET", "/ops", ops),
    ("GET", "/ops/(?P<name>[a-z_]{1,64})", op_form),
    ("POST", "/ops/(?P<name>[a-z_]{1,64})", op_run),
)
