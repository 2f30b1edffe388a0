"""Tier 2 on the stored object: one loader per object type; what each operation needs is its own binding.

An operation declares in its `Policy` which input field names the one existing object it acts on
(`stored`), which attributes a change sets (`changes`) or a create carries beyond its fields
(`new_attributes`), or a rule of its own (`rule`: `assignments`, `replay`); the catalog checks those
declarations when it compiles the operation, so a new operation's security is declared in its class.

An operation on one existing object (get, cancel, sync, update, delete, ...) is decided on the object's
attributes *as stored* — every field `permissionObjects` lists for its type — never only on the id the
input gives. The objects come from an `ObjectSource` (the engine's stored requests, machines and templates:
nothing else of it) and their attributes from the functions the listings filter with
(`backends/local/attributes.py`), so a listing and a single read agree.

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

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pluginsdk.errors import NotFoundError, PermissionDeniedError, StateConflictError
from pluginsdk.operations import Operation, OperationSpec
from pluginsdk.principal import Principal

from ..attributes import machine_attrs, request_attrs, template_attrs

if TYPE_CHECKING:
    from pluginsdk.models import Machine, Request, Template

    from ..call import Call
    from ..policy import CompiledPolicy
    from .store import AuthStore

__all__ = [
    "KINDS",
    "ObjectKind",
    "ObjectSource",
    "check_stored",
    "decides_stored",
    "denied",
    "handles_stored",
    "new_attributes",
]

Attrs = dict[str, Any]


class ObjectSource(Protocol):
    """The provisioning objects as stored: all the auth service reads of the engine (`deps.StoredObjects`)."""

    async def request(self, request_id: str) -> Request | None: ...

    async def machine(self, machine_id: str) -> Machine | None: ...

    async def template(self, template_id: str) -> Template | None: ...

    async def templates(self, limit: int) -> list[Template]: ...

    async def requests(self, limit: int) -> list[Request]: ...

    async def machines(self, limit: int) -> list[Machine]: ...


class ObjectKind(NamedTuple):
    """How to find one object type as stored."""

    object_type: str
    load: Callable[[ObjectSource, AuthStore, str], Awaitable[Any]]
    """(stored objects, auth tables, id) -> the stored object, or None when there is none."""
    attrs: Callable[[Any], Attrs]
    """The stored object's attributes (the same function its listings filter with)."""
    not_found: Callable[[str], NotFoundError]
    """The error a missing object answers with (the handler's own wording)."""


async def _request(objects: ObjectSource, auth: AuthStore, request_id: str) -> Any:
    return await objects.request(request_id)


async def _machine(objects: ObjectSource, auth: AuthStore, machine_id: str) -> Any:
    return await objects.machine(machine_id)


async def _template(objects: ObjectSource, auth: AuthStore, template_id: str) -> Any:
    return await objects.template(template_id)


async def _role(objects: ObjectSource, auth: AuthStore, role_name: str) -> Any:
    row = await auth.get_role(role_name)
    return None if row is None else {"roleName": row["role_name"]}


def _as_is(attrs: Attrs) -> Attrs:
    return attrs


KINDS: dict[str, ObjectKind] = {
    "request": ObjectKind(
        "request",
        _request,
        request_attrs,
        lambda i: NotFoundError("request", i, f"Request '{i}' not found."),
    ),
    "machine": ObjectKind(
        "machine",
        _machine,
        machine_attrs,
        lambda i: NotFoundError("machine", i, f"Machine '{i}' not found."),
    ),
    "template": ObjectKind(
        "template",
        _template,
        template_attrs,
        lambda i: NotFoundError("template", i, f"Template '{i}' not found."),
    ),
    "role": ObjectKind("role", _role, _as_is, lambda i: NotFoundError("role", i, f"Role '{i}' not found.")),
}
"""Object type -> its loader (userRole assignments are sets per user: see `_user_roles`)."""


def handles_stored(spec: OperationSpec, op: Operation) -> bool:
    """Whether tier 2 of this call is decided on stored objects here (instead of on the input alone)."""
    return spec.stored_id(op) is not None or spec.policy.rule == "assignments"


def denied(principal: Principal, method: str, object_type: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"Not authorized: '{principal.user_id}' may not {method} this {object_type}.",
        details={"field": object_type, "expected": method},
    )


def decides_stored(spec: OperationSpec) -> bool:
    """Whether tier 2 of `spec` reads stored objects (`Policy.stored` or `Policy.rule`)."""
    return spec.policy.stored is not None or spec.policy.rule is not None


def new_attributes(spec: OperationSpec, op: Operation, attrs: Attrs) -> Attrs:
    """The attributes tier 2 decides a new object on: the input's, and those `Policy.new_attributes` names."""
    extra = spec.policy.new_attributes
    if not extra:
        return attrs
    return {k: v for k, v in {**attrs, **{a: getattr(op, f) for a, f in extra.items()}}.items() if v is not None}


async def check_stored(objects: ObjectSource, auth: AuthStore, policy: CompiledPolicy, call: Call) -> None:
    """Tier 2 of `call.op` on the stored object(s) it names; raises NotFoundError / PermissionDeniedError.
    A read of one object leaves the object decided on in `call.stored`: its handler answers with it."""
    spec, op, principal = call.spec, call.op, call.principal
    rule = spec.policy.rule
    if rule == "assignments":
        await _user_roles(policy, principal, spec, op, auth.roles_of)
    elif rule == "replay":
        await _replay(objects, auth, policy, principal, op)
    else:
        ident = spec.stored_id(op)
        if ident is not None:
            obj = await _check_one(objects, auth, policy, call, ident)
            if spec.method == "GET":
                call.stored = obj  # one read: the decision and the answer are on the same object


async def _check_one(objects: ObjectSource, auth: AuthStore, policy: CompiledPolicy, call: Call, ident: str) -> Any:
    """`decide` on the one stored object the call names (`Policy.stored`); the object as read."""
    principal, op, spec = call.principal, call.op, call.spec
    method = spec.method
    kind = KINDS[str(spec.policy.object_type)]
    obj = await kind.load(objects, auth, ident)
    if obj is None:
        raise kind.not_found(ident)
    stored = kind.attrs(obj)
    decide(policy, principal, kind, ident, stored, method=method)
    changes = {a: getattr(op, f) for a, f in spec.policy.changes.items() if getattr(op, f) is not None}
    if method != "GET" and changes:
        changed = {**stored, **changes}
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


async def _replay(
    objects: ObjectSource, auth: AuthStore, policy: CompiledPolicy, principal: Principal, op: Operation
) -> None:
    """A create naming an existing request id is a replay: it answers with that request, so the caller must
    be allowed to read it (403 when it may read but not POST on it). A caller that may not read it gets
    one 409 whatever the request holds: nothing about its status or parameters."""
    request_id = getattr(op, "request_id", None)
    if not request_id:
        return
    found = await objects.request(str(request_id))
    if found is None:
        return
    stored = request_attrs(found)
    if policy.is_allowed(principal, "request", stored, "GET"):
        if not policy.is_allowed(principal, "request", stored, "POST"):
            raise denied(principal, "POST", "request")
        return
    raise StateConflictError(
        f"Request id '{request_id}' is already in use; submit again with a new id (or none).",
        details={"field": "request_id", "value": str(request_id), "expected": "a new request id"},
    )
