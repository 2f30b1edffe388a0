"""The administrators' view of API keys: every user's keys, a key issued for a user (its secret shown once),
deactivated, reactivated or deleted. The caller's own keys are the API keys page (`pages.keys`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from starlette.responses import Response

from ._html import Safe, join, render
from .pages import back, card_form, confirm_first, field, link, notice, page, table

if TYPE_CHECKING:
    from ._web import Ctx

__all__ = ["ROUTES"]


def _button(ctx: Ctx, key_id: str, verb: str, name: str) -> Safe:
    """A one-button form: `verb` (activate, deactivate, delete) the key."""
    return render(
        '<form method="post" action="/ui/api-keys/{i}/{v}" class="inline">{csrf}'
        '<button type="submit" aria-label="{l} key {n}">{l}</button></form>',
        i=quote(key_id, safe=""),
        v=verb,
        csrf=ctx.csrf,
        l=verb.capitalize(),
        n=name,
    )


async def api_keys(ctx: Ctx) -> Response:
    return await _page(ctx, Safe(""))


async def _page(ctx: Ctx, created: Safe) -> Response:
    user = ctx.query("user_id")
    data: dict[str, Any] = {"page_size": 100, "max_items": 100}
    if user:
        data["user_id"] = user
    if ctx.query("next"):
        data["starting_token"] = ctx.query("next")
    listing = await ctx.call("list_api_keys", data)
    can_update, can_delete = ctx.can("update_api_key"), ctx.can("delete_api_key")

    def actions(key_id: str, name: str, active: bool) -> Safe:
        parts = []
        if can_update:
            parts.append(_button(ctx, key_id, "deactivate" if active else "activate", name))
        if can_delete:
            parts.append(_button(ctx, key_id, "delete", name))
        return join(parts, " ")

    rows = [
        (
            k.api_key_name,
            k.user_id,
            k.description,
            "yes" if k.is_active == "true" else "no",
            k.expires_at or "never",
            k.created_by,
            actions(k.api_key_id, k.api_key_name, k.is_active == "true"),
        )
        for k in listing.items
    ]
    filt = render(
        '<form method="get" action="/ui/api-keys" class="inline">{f}<button type="submit">Filter</button></form>',
        f=field("User id", "user_id", user),
    )
    parts = [
        notice(ctx),
        created,
        filt,
        table(("Name", "User", "Description", "Active", "Expires", "Created by", "Actions"), rows, "API keys"),
    ]
    if listing.next_token:
        parts.append(link(f"/ui/api-keys?{urlencode({'user_id': user, 'next': listing.next_token})}", "Next page"))
    if ctx.can("create_api_key"):
        parts.append(
            card_form(
                ctx,
                "/ui/api-keys",
                join(
                    [
                        field("For user id", "for_user", required=True),
                        field("Name", "api_key_name", required=True),
                        field("Description", "description", required=True),
                        field("Expires on (empty: never)", "expires_at", kind="date"),
                    ]
                ),
                "Issue key",
                "Issue a key for a user",
            )
        )
    return page(ctx, "All API keys", join(parts))


async def issue(ctx: Ctx) -> Response:
    data = {k: ctx.value(k) for k in ("api_key_name", "description", "expires_at") if ctx.value(k)}
    data["user_id"] = ctx.value("for_user")
    created = await ctx.call("create_api_key", data)
    shown = render(
        '<section class="card secret" role="status"><h2>Key {n} issued for {u}</h2>'
        '<p>Hand over the secret now: it is shown only once.</p><p><code id="secret">{s}</code></p></section>',
        n=created.api_key_name,
        u=created.user_id,
        s=created.api_key,
    )
    return await _page(ctx, shown)


async def set_active(ctx: Ctx, key_id: str, verb: str) -> Response:
    if verb == "deactivate":
        asked = confirm_first(
            ctx,
            "update_api_key",
            f"Deactivate key {key_id}?",
            f"Key {key_id} stops working at once, for every client using it, until it is activated again.",
            button="Deactivate key",
            back_to="/ui/api-keys",
        )
        if asked is not None:
            return asked
    await ctx.call("update_api_key", {"api_key_id": key_id, "is_active": "true" if verb == "activate" else "false"})
    return back("/ui/api-keys", f"Key {key_id} {verb}d.")


async def delete(ctx: Ctx, key_id: str) -> Response:
    asked = confirm_first(
        ctx,
        "delete_api_key",
        f"Delete key {key_id}?",
        f"Key {key_id} is revoked for good: every client using it is refused from now on.",
        button="Delete key",
        back_to="/ui/api-keys",
    )
    if asked is not None:
        return asked
    await ctx.call("delete_api_key", {"api_key_id": key_id})
    return back("/ui/api-keys", f"Deleted key {key_id}.")


_ID = "[^/]{1,200}"
ROUTES = (
    ("GET", "/api-keys", api_keys),
    ("POST", "/api-keys", issue),
    ("POST", f"/api-keys/(?P<key_id>{_ID})/(?P<verb>activate|deactivate)", set_active),
    ("POST", f"/api-keys/(?P<key_id>{_ID})/delete", delete),
)
