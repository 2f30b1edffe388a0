"""Tier 2 on the stored object: one loader per object type, one plan per operation on an existing object.

An operation on one existing object (get, cancel, sync, update, delete, ...) is decided on the object's
attributes *as stored* — every field `permissionObjects` lists for its type — never only on the id the
input gives. The attributes come from the same functions the listings filter with (`request_attrs`,
`machine_attrs`, `template_attrs` of the provisioning handlers), so a listing and a single read agree.

Outcome for a principal and the operation's method M (no existence oracle):

- the object is missing                                  -> 404, the type's not-found error
- the stored object may not be read (GET), whatever M    -> the same 404 (a write allowed on an object
                                                            the caller may not read is not reached)
- it may be read, M changes it and M is denied           -> 403
- an update that changes attributes (a template's providerApi) must also be allowed M on the result

User-role assignments are sets per user: an assignment the caller may not read is left alone by
`PUT /user-roles` and `DELETE /user-roles` (and not shown in their answers), like one that does not exist;
those it may read must be allowed what the write does to them. Idempotent creates with a caller-chosen id
(`request_id`) that names a request the caller may not read answer 409 without revealing anything about
that request.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pluginsdk.errors import NotFoundError, PermissionDeniedError, StateConflictError
from pluginsdk.operations import Operation, OperationSpec
from pluginsdk.principal import Principal

if TYPE_CHECKING:
    from ..call import Call
    from ..engine import Engine
    from ..policy import CompiledPolicy
    from .store import AuthStore

__all__ = [
    "CREATE_ATTRIBUTES",
    "KINDS",
    "OBJECT_OPERATIONS",
    "SPECIAL_OPERATIONS",
    "ObjectKind",
    "ObjectPlan",
    "check_stored",
    "denied",
    "handles_stored",
]

Attrs = dict[str, Any]


class ObjectKind(NamedTuple):
    """How to find one object type as stored."""

    object_type: str
    load: Callable[[Engine, AuthStore, str], Awaitable[Any]]
    """(engine, auth tables, id) -> the stored object, or None when there is none."""
    attrs: Callable[[Any], Attrs]
    """The stored object's attributes (the same function its listings filter with)."""
    not_found: Callable[[str], NotFoundError]
    """The error a missing object answers with (the handler's own wording)."""


async def _request(engine: Engine, auth: AuthStore, request_id: str) -> Any:
    return await engine.db.get_request(request_id)


async def _machine(engine: Engine, auth: AuthStore, machine_id: str) -> Any:
    return await engine.db.get_machine(machine_id)


async def _template(engine: Engine, auth: AuthStore, template_id: str) -> Any:
    return await engine.template(template_id)


async def _role(engine: Engine, auth: AuthStore, role_name: str) -> Any:
    row = await auth.get_role(role_name)
    return None if row is None else {"roleName": row["role_name"]}


@functools.cache
def _handlers(module: str) -> Any:
    """A handler module, imported on first use (handlers load lazily: a CLI call imports only its own)."""
    return importlib.import_module(f"..handlers.{module}", __package__)


def _request_attrs(r: Any) -> Attrs:
    attrs: Attrs = _handlers("requests").request_attrs(r)
    return attrs


def _machine_attrs(m: Any) -> Attrs:
    attrs: Attrs = _handlers("requests").machine_attrs(m)
    return attrs


def _template_attrs(t: Any) -> Attrs:
    attrs: Attrs = _handlers("templates").template_attrs(t)
    return attrs


def _as_is(attrs: Attrs) -> Attrs:
    return attrs


KINDS: dict[str, ObjectKind] = {
    "request": ObjectKind(
        "request",
        _request,
        _request_attrs,
        lambda i: NotFoundError("request", i, f"Request '{i}' not found."),
    ),
    "machine": ObjectKind(
        "machine",
        _machine,
        _machine_attrs,
        lambda i: NotFoundError("machine", i, f"Machine '{i}' not found."),
    ),
    "template": ObjectKind(
        "template",
        _template,
        _template_attrs,
        lambda i: NotFoundError("template", i, f"Template '{i}' not found."),
    ),
    "role": ObjectKind("role", _role, _as_is, lambda i: NotFoundError("role", i, f"Role '{i}' not found.")),
}
"""Object type -> its loader (userRole assignments are sets per user: see `_user_roles`)."""


def _always(op: Operation) -> bool:
    return True


def _template_after_update(op: Operation, stored: Attrs) -> Attrs:
    provider_api = getattr(op, "provider_api", None)
    return stored if provider_api is None else {**stored, "providerApi": provider_api}


class ObjectPlan(NamedTuple):
    """One operation on one existing object: which kind, and which input field holds its id."""

    kind: str
    field: str
    applies: Callable[[Operation], bool] = _always
    """False when this call names no stored object (validate_template with a configuration)."""
    after: Callable[[Operation, Attrs], Attrs] | None = None
    """The attributes the object will have after the change (when the change can alter them)."""


OBJECT_OPERATIONS: dict[str, ObjectPlan] = {
    **{
        name: ObjectPlan("request", "request_id")
        for name in (
            "get_request",
            "cancel_request",
            "update_request_status",
            "sync_request",
            "complete_request",
            "populate_machine_ids",
        )
    },
    "get_machine": ObjectPlan("machine", "machine_id"),
    "get_machine_health": ObjectPlan("machine", "machine_id"),
    "get_template": ObjectPlan("template", "template_id"),
    "update_template": ObjectPlan("template", "template_id", after=_template_after_update),
    "delete_template": ObjectPlan("template", "template_id"),
    "validate_template": ObjectPlan(
        "template",
        "template_id",
        applies=lambda op: (
            getattr(op, "template_config", None) is None and getattr(op, "template_id", None) is not None
        ),
    ),
    "update_role": ObjectPlan("role", "role_name"),
    "delete_role": ObjectPlan("role", "role_id"),
}
"""SDK name -> plan, for every operation on one existing object of a permission object type."""

SPECIAL_OPERATIONS = frozenset({"update_user_roles", "delete_user_roles", "create_request", "create_return_request"})
"""Decided here too, each by its own rule (replacing writes, deletes of a set, idempotent replays)."""


def _create_template(op: Operation, attrs: Attrs) -> Attrs:
    return {**attrs, "providerApi": getattr(op, "provider_api", None)}


CREATE_ATTRIBUTES: dict[str, Callable[[Operation, Attrs], Attrs]] = {"create_template": _create_template}
"""Creates whose new object carries attributes beyond the policy fields of the input (tier 2 sees them).
A new request's `requestId` is not one of them: the remote client always sends one (for safe retries) and an
in-process call lets the engine make it, so deciding on it would make the interfaces disagree."""


def handles_stored(spec: OperationSpec, op: Operation) -> bool:
    """Whether tier 2 of this call is decided on stored objects here (instead of on the input alone)."""
    plan = OBJECT_OPERATIONS.get(spec.name)
    if plan is not None:
        return plan.applies(op)
    return spec.name in ("update_user_roles", "delete_user_roles")


def denied(principal: Principal, method: str, object_type: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"Not authorized: '{principal.user_id}' may not {method} this {object_type}.",
        details={"field": object_type, "expected": method},
    )


async def check_stored(engine: Engine, auth: AuthStore, policy: CompiledPolicy, call: Call) -> None:
    """Tier 2 of `call.op` on the stored object(s) it names; raises NotFoundError / PermissionDeniedError.
    A read of one object leaves the object decided on in `call.stored`: its handler answers with it."""
    spec, op, principal = call.spec, call.op, call.principal
    method = spec.method
    plan = OBJECT_OPERATIONS.get(spec.name)
    if plan is not None:
        if plan.applies(op):
            obj = await _check_one(engine, auth, policy, call, plan)
            if method == "GET":
                call.stored = obj  # one read: the decision and the answer are on the same object
        return
    if spec.name in ("update_user_roles", "delete_user_roles"):
        await _user_roles(policy, principal, spec, op, auth.roles_of)
    elif spec.name in ("create_request", "create_return_request"):
        await _replay(engine, auth, policy, principal, op)


async def _check_one(engine: Engine, auth: AuthStore, policy: CompiledPolicy, call: Call, plan: ObjectPlan) -> Any:
    """`decide` on the one stored object `plan` names; the object as read."""
    principal, op, method = call.principal, call.op, call.spec.method
    kind = KINDS[plan.kind]
    ident = str(getattr(op, plan.field))
    obj = await kind.load(engine, auth, ident)
    if obj is None:
        raise kind.not_found(ident)
    stored = kind.attrs(obj)
    decide(policy, principal, kind, ident, stored, method=method)
    if method != "GET" and plan.after is not None:
        changed = plan.after(op, stored)
        if changed != stored and not policy.is_allowed(principal, kind.object_type, changed, method):
            raise denied(principal, method, kind.object_type)
    return obj


def decide(
    policy: CompiledPolicy,
    principal: Principal,
    kind: ObjectKind,
    ident: str,
    stored: Mapping[str, Any],
    *,
    method: str,
) -> None:
    """The rule of the module docstring for one stored object."""
    t = kind.object_type
    if not policy.is_allowed(principal, t, stored, "GET"):
        raise kind.not_found(ident)
    if method != "GET" and not policy.is_allowed(principal, t, stored, method):
        raise denied(principal, method, t)


async def _user_roles(
    policy: CompiledPolicy,
    principal: Principal,
    spec: OperationSpec,
    op: Operation,
    roles_of: Callable[[str], Awaitable[list[str]]],
) -> None:
    """PUT replaces the user's assignments the caller may read: every role named needs PUT, every readable one
    it removes PUT and DELETE. DELETE removes the readable ones: each needs DELETE; a user none of whose
    assignments may be read reads as one without assignments (404). Assignments the caller may not read are
    neither decided nor touched (the handlers keep them)."""
    from pluginsdk.operations.roles import DeleteUserRolesCommand, UpdateUserRolesCommand

    assert isinstance(op, UpdateUserRolesCommand | DeleteUserRolesCommand)
    user_id = op.user_id
    readable = [
        {"userId": user_id, "roleName": r}
        for r in await roles_of(user_id)
        if policy.is_allowed(principal, "userRole", {"userId": user_id, "roleName": r}, "GET")
    ]
    if isinstance(op, UpdateUserRolesCommand):
        named = list(op.role_name)
        for role in named:
            if not policy.is_allowed(principal, "userRole", {"userId": user_id, "roleName": role}, "PUT"):
                raise denied(principal, "PUT", "userRole")
        for attrs in readable:
            if attrs["roleName"] in named:
                continue
            if not (
                policy.is_allowed(principal, "userRole", attrs, "PUT")
                and policy.is_allowed(principal, "userRole", attrs, "DELETE")
            ):
                raise denied(principal, "PUT", "userRole")
        return
    if not readable:
        raise NotFoundError("user_role", user_id, f"User '{user_id}' has no role assignments.")
    for attrs in readable:
        if not policy.is_allowed(principal, "userRole", attrs, "DELETE"):
            raise denied(principal, "DELETE", "userRole")


async def _replay(engine: Engine, auth: AuthStore, policy: CompiledPolicy, principal: Principal, op: Operation) -> None:
    """A create naming an existing request id is a replay: it answers with that request, so the caller must
    be allowed to read it (403 when it may read but not POST on it). A caller that may not read it gets
    one 409 whatever the request holds: nothing about its status or parameters."""
    request_id = getattr(op, "request_id", None)
    if not request_id:
        return
    found = await _request(engine, auth, str(request_id))
    if found is None:
        return
    stored = _request_attrs(found)
    if policy.is_allowed(principal, "request", stored, "GET"):
        if not policy.is_allowed(principal, "request", stored, "POST"):
            raise denied(principal, "POST", "request")
        return
    raise StateConflictError(
        f"Request id '{request_id}' is already in use; submit again with a new id (or none).",
        details={"field": "request_id", "value": str(request_id), "expected": "a new request id"},
    )
