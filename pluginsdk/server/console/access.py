"""The access pages: roles, who holds which role, and the managed-pool users (create, reset, MFA state)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.responses import Response

from ...errors import ValidationError
from ._html import Safe, join, render
from .pages import back, card_form, choices, confirm_first, field, link, notice, options, page, table

if TYPE_CHECKING:
    from ._web import Ctx

__all__ = ["ROUTES"]


def _button(ctx: Ctx, action: str, label: str, aria: str, extra: Safe = Safe("")) -> Safe:
    """A one-button form posting to `action` (with the CSRF token)."""
    return render(
        '<form method="post" action="{a}" class="inline">{csrf}{extra}'
        '<button type="submit" aria-label="{aria}">{label}</button></form>',
        a=action,
        csrf=ctx.csrf,
        extra=extra,
        aria=aria,
        label=label,
    )


def _hidden(name: str, value: str) -> Safe:
    return render('<input type="hidden" name="{n}" value="{v}">', n=name, v=value)


# -- roles ------------------------------------------------------------------------------
async def roles(ctx: Ctx) -> Response:
    listing = (await ctx.call("list_roles", {})).message.items
    can_edit, can_delete = ctx.can("update_role"), ctx.can("delete_role")

    def actions(name: str) -> Safe:
        parts = []
        if can_edit:
            parts.append(link(f"/ui/roles/{quote(name, safe='')}", "Edit"))
        if can_delete:
            parts.append(_button(ctx, f"/ui/roles/{quote(name, safe='')}/delete", "Delete", f"Delete role {name}"))
        return join(parts, " ")

    rows = [
        (r.role_name, r.description, "yes" if r.mfa_required else "no", r.source or "", actions(r.role_name))
        for r in listing
    ]
    parts = [notice(ctx), table(("Role", "Description", "MFA required", "Source", "Actions"), rows, "Roles")]
    if ctx.can("create_role"):
        parts.append(
            card_form(
                ctx,
                "/ui/roles",
                join(
                    [
                        field("Role name", "role_name", required=True),
                        field("Description", "description", required=True),
                        choices("checkbox", "mfa_required", ("MFA required",), []),
                    ]
                ),
                "Create role",
                "Create a role",
            )
        )
    return page(ctx, "Roles", join(parts))


async def create_role(ctx: Ctx) -> Response:
    data = {
        "role_name": ctx.value("role_name"),
        "description": ctx.value("description"),
        "mfa_required": bool(ctx.value("mfa_required")),
    }
    await ctx.call("create_role", data)
    return back("/ui/roles", f"Created role {data['role_name']}.")


async def role_form(ctx: Ctx, role: str) -> Response:
    found = [r for r in (await ctx.call("list_roles", {})).message.items if r.role_name == role]
    if not found:
        return page(ctx, "No such role", render('<p class="error" role="alert">No role is named {r}.</p>', r=role), 404)
    current = found[0]
    holders = []
    if ctx.can("list_user_roles"):
        holders = [a.user_id for a in (await ctx.call("list_user_roles", {})).message.items if role in a.role_name]
    parts = [
        render("<p>Held by: {h}</p>", h=", ".join(holders) or "nobody"),
    ]
    if ctx.can("update_role"):
        parts.append(
            card_form(
                ctx,
                f"/ui/roles/{quote(role, safe='')}",
                join(
                    [
                        field("Description", "description", current.description, required=True),
                        choices(
                            "checkbox",
                            "mfa_required",
                            ("MFA required",),
                            ["MFA required"] if current.mfa_required else [],
                        ),
                    ]
                ),
                "Save role",
            )
        )
    return page(ctx, f"Role {role}", join(parts))


async def update_role(ctx: Ctx, role: str) -> Response:
    data = {"role_name": role, "description": ctx.value("description"), "mfa_required": bool(ctx.value("mfa_required"))}
    await ctx.call("update_role", data)
    return back("/ui/roles", f"Saved role {role}.")


async def delete_role(ctx: Ctx, role: str) -> Response:
    asked = confirm_first(
        ctx,
        "delete_role",
        f"Delete role {role}?",
        f"Role {role} will be deleted: its holders lose what it grants.",
        button="Delete role",
        back_to="/ui/roles",
    )
    if asked is not None:
        return asked
    await ctx.call("delete_role", {"role_id": role})
    return back("/ui/roles", f"Deleted role {role}.")


# -- user roles -------------------------------------------------------------------------
async def user_roles(ctx: Ctx) -> Response:
    assignments = (await ctx.call("list_user_roles", {})).message.items
    can_change = ctx.can("update_user_roles") and ctx.can("delete_user_roles")

    def held(user_id: str, names: list[str]) -> Safe:
        if not can_change:
            return Safe(", ".join(names))
        return join(
            render(
                '<span class="held">{r} {b}</span>',
                r=name,
                b=_button(
                    ctx,
                    "/ui/user-roles/unassign",
                    "Unassign",
                    f"Unassign {name} from {user_id}",
                    join([_hidden("user_id", user_id), _hidden("role_name", name)]),
                ),
            )
            for name in names
        )

    rows = [(a.user_id, held(a.user_id, a.role_name)) for a in assignments]
    parts = [notice(ctx), table(("User", "Roles"), rows, "Role assignments")]
    if ctx.can("create_user_roles"):
        names = [r.role_name for r in (await ctx.call("list_roles", {})).message.items] if ctx.can("list_roles") else []
        parts.append(
            render(
                '<h2>Assign a role</h2><form method="post" action="/ui/user-roles" class="card">{csrf}{u}'
                '<label for="f-role_name">Role</label><select id="f-role_name" name="role_name" required>{o}</select>'
                '<button type="submit">Assign role</button></form>',
                csrf=ctx.csrf,
                u=field("User id", "user_id", required=True),
                o=options(names, ""),
            )
        )
    return page(ctx, "User roles", join(parts))


async def assign_role(ctx: Ctx) -> Response:
    user_id, role = ctx.value("user_id"), ctx.value("role_name")
    await ctx.call("create_user_roles", {"user_id": user_id, "role_name": [role]})
    return back("/ui/user-roles", f"Assigned {role} to {user_id}.")


async def unassign_role(ctx: Ctx) -> Response:
    """One role off a user: the user's other roles kept (update), or every assignment gone when it was the last."""
    user_id, role = ctx.value("user_id"), ctx.value("role_name")
    asked = confirm_first(
        ctx,
        "update_user_roles",
        f"Unassign {role} from {user_id}?",
        f"{user_id} will no longer hold {role} (their other roles stay).",
        button="Unassign role",
        back_to="/ui/user-roles",
    )
    if asked is not None:
        return asked
    current = [a for a in (await ctx.call("list_user_roles", {})).message.items if a.user_id == user_id]
    if not current or role not in current[0].role_name:
        raise ValidationError(
            f"{user_id} does not hold {role}.", details={"field": "role_name", "value": role, "expected": "a held role"}
        )
    rest = [r for r in current[0].role_name if r != role]
    if rest:
        await ctx.call("update_user_roles", {"user_id": user_id, "role_name": rest})
    else:
        await ctx.call("delete_user_roles", {"user_id": user_id})
    return back("/ui/user-roles", f"Unassigned {role} from {user_id}.")


# -- managed users ----------------------------------------------------------------------
async def users(ctx: Ctx) -> Response:
    return await _users_page(ctx, Safe(""))


async def _users_page(ctx: Ctx, shown: Safe) -> Response:
    data: dict[str, Any] = {"page_size": 60}
    if ctx.query("next"):
        data["starting_token"] = ctx.query("next")
    listing = await ctx.call("list_managed_users", data)
    can_reset, can_mfa = ctx.can("reset_managed_user_password"), ctx.can("reset_managed_user_mfa")

    def actions(user_id: str, mfa: bool) -> Safe:
        base = f"/ui/users/{quote(user_id, safe='')}"
        parts = []
        if can_reset:
            parts.append(_button(ctx, f"{base}/reset-password", "Reset password", f"Reset password of {user_id}"))
        if can_mfa and mfa:
            parts.append(_button(ctx, f"{base}/reset-mfa", "Reset MFA", f"Reset MFA of {user_id}"))
        return join(parts, " ")

    rows = [
        (
            u.user_id,
            u.email,
            u.user_status,
            "yes" if u.enabled else "no",
            "enrolled" if u.mfa_enabled else "none",
            actions(u.user_id, u.mfa_enabled),
        )
        for u in listing.users
    ]
    headers = ("User", "Email", "Status", "Enabled", "MFA", "Actions")
    parts = [notice(ctx), shown, table(headers, rows, "Managed users")]
    if listing.next_token:
        parts.append(link(f"/ui/users?next={quote(listing.next_token, safe='')}", "Next page"))
    if ctx.can("create_managed_user"):
        parts.append(
            card_form(
                ctx,
                "/ui/users",
                join(
                    [
                        field("User id", "user_id", required=True),
                        field("Email", "email", kind="email", required=True),
                    ]
                ),
                "Create user",
                "Create a user",
            )
        )
    return page(ctx, "Users", join(parts))


def _temporary(user_id: str, written: Any, what: str) -> Safe:
    """The answer of a create or reset: the temporary password, once, where no mail server sent it."""
    password = getattr(written, "temporary_password", None)
    if not password:
        return render(
            '<p class="notice" role="status">{w} {u}: the temporary password was mailed.</p>', w=what, u=user_id
        )
    return render(
        '<section class="card secret" role="status"><h2>{w} {u}</h2><p>No mail server is configured: hand over '
        'this temporary password now, it is shown only once.</p><p><code id="secret">{p}</code></p></section>',
        w=what,
        u=user_id,
        p=password,
    )


async def create_user(ctx: Ctx) -> Response:
    user_id = ctx.value("user_id")
    written = await ctx.call("create_managed_user", {"user_id": user_id, "email": ctx.value("email")})
    return await _users_page(ctx, _temporary(user_id, written, "Created user"))


async def reset_password(ctx: Ctx, user_id: str) -> Response:
    asked = confirm_first(
        ctx,
        "reset_managed_user_password",
        f"Reset the password of {user_id}?",
        f"{user_id}'s password stops working and their sessions end; they sign in with a new temporary password.",
        button="Reset password",
        back_to="/ui/users",
    )
    if asked is not None:
        return asked
    written = await ctx.call("reset_managed_user_password", {"user_id": user_id, "confirm_reset": True})
    return await _users_page(ctx, _temporary(user_id, written, "Reset the password of"))


async def reset_mfa(ctx: Ctx, user_id: str) -> Response:
    asked = confirm_first(
        ctx,
        "reset_managed_user_mfa",
        f"Reset the MFA of {user_id}?",
        f"{user_id}'s authenticator is removed: they sign in with their password alone until they enrol again.",
        button="Reset MFA",
        back_to="/ui/users",
    )
    if asked is not None:
        return asked
    await ctx.call("reset_managed_user_mfa", {"user_id": user_id})
    return back("/ui/users", f"Reset the MFA of {user_id}: they sign in with their password and may enrol again.")


_NAME = "[^/]{1,200}"
ROUTES = (
    ("GET", "/roles", roles),
    ("POST", "/roles", create_role),
    ("GET", f"/roles/(?P<role>{_NAME})", role_form),
    ("POST", f"/roles/(?P<role>{_NAME})", update_role),
    ("POST", f"/roles/(?P<role>{_NAME})/delete", delete_role),
    ("GET", "/user-roles", user_roles),
    ("POST", "/user-roles", assign_role),
    ("POST", "/user-roles/unassign", unassign_role),
    ("GET", "/users", users),
    ("POST", "/users", create_user),
    ("POST", f"/users/(?P<user_id>{_NAME})/reset-password", reset_password),
    ("POST", f"/users/(?P<user_id>{_NAME})/reset-mfa", reset_mfa),
)
