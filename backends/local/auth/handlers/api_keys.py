"""Handlers: API keys, administrative and self-service.

The secret is `psdk_` + 256 random bits, returned once by create and kept
only as its SHA-256. Self-service calls see only the caller's keys: any other
key reads as not found. Self-service cannot undo an administrator: a key an
administrator deactivated stays off, and an expiry an administrator set is a
ceiling (both 403 on the self-service routes; the admin routes lift them).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import InvalidPaginationToken, NotFoundError, PermissionDeniedError, ValidationError
from pluginsdk.models.auth_results import ApiKeyCreated, ApiKeyList, ApiKeyResult
from pluginsdk.operations.api_keys import (
    CreateAPIKeyCommand,
    CreateMyAPIKeyCommand,
    DeleteAPIKeyCommand,
    DeleteMyAPIKeyCommand,
    GetAPIKeyQuery,
    GetMyAPIKeyQuery,
    ListAPIKeysQuery,
    ListMyAPIKeysQuery,
    UpdateAPIKeyCommand,
    UpdateMyAPIKeyCommand,
)
from pluginsdk.principal import Principal

from ...registry import HandlerTable
from ...store.db import Row
from ..crypto import new_api_key, now, parse_expiry, parse_ts, sha256_hex, ts
from ..service import AuthService
from ._common import api_key_from_row

if TYPE_CHECKING:
    from ...call import Call
    from ..store import AuthStore

handlers = HandlerTable(AuthService)

SELF_SERVICE_DAYS = 365
MAX_ITEMS = 3000


def _expiry(value: str, *, latest: datetime | None) -> datetime:
    expiry = parse_expiry(value)
    if expiry <= now():
        raise ValidationError(
            "'expires_at' must be in the future.",
            details={"field": "expires_at", "value": value[:64], "expected": "a future time"},
        )
    if latest is not None and expiry > latest:
        raise ValidationError(
            f"'expires_at' must be at most {SELF_SERVICE_DAYS} days after the key's creation ({ts(latest)}).",
            details={"field": "expires_at", "value": value[:64], "expected": f"<= {ts(latest)}"},
        )
    return expiry


async def _list(
    svc: AuthService, listing: str, user_id: str | None, op: ListAPIKeysQuery | ListMyAPIKeysQuery
) -> ApiKeyList:
    max_items = min(op.max_items, MAX_ITEMS)
    size = min(op.page_size, max_items)
    pos = svc.decode_page(listing, op.starting_token)
    after: tuple[str, str] | None = None
    if pos is not None:
        c, i = pos.get("c"), pos.get("i")
        if not isinstance(c, str) or not isinstance(i, str):
            raise InvalidPaginationToken(details={"field": "startingToken"})
        after = (str(c), str(i))
    rows = await svc.store.page_api_keys(user_id, after, size + 1)
    more = len(rows) > size
    rows = rows[:size]
    items = [api_key_from_row(r) for r in rows]
    if not more:
        return ApiKeyList(items=items)
    token = svc.encode_page(listing, {"c": rows[-1]["created_at"], "i": rows[-1]["api_key_id"]})
    return ApiKeyList(items=items, next_token=token, truncated=True)


@handlers.on(ListAPIKeysQuery)
async def list_api_keys(svc: AuthService, op: ListAPIKeysQuery, call: Call) -> ApiKeyList:
    return await _list(svc, f"api-keys:all:{op.user_id or ''}", op.user_id, op)


@handlers.on(ListMyAPIKeysQuery)
async def list_my_api_keys(svc: AuthService, op: ListMyAPIKeysQuery, call: Call) -> ApiKeyList:
    principal = call.principal
    return await _list(svc, f"api-keys:self:{principal.user_id}", principal.user_id, op)


async def _owned(svc: AuthService, api_key_id: str, owner: str | None) -> Row:
    row = await svc.store.get_api_key(api_key_id)
    if row is None or (owner is not None and row["user_id"] != owner):
        raise NotFoundError("api_key", api_key_id, f"API key '{api_key_id}' not found.")
    return row


@handlers.on(GetAPIKeyQuery)
async def get_api_key(svc: AuthService, op: GetAPIKeyQuery, call: Call) -> ApiKeyResult:
    row = await _owned(svc, op.api_key_id, None)
    return ApiKeyResult(**api_key_from_row(row).model_dump())


@handlers.on(GetMyAPIKeyQuery)
async def get_my_api_key(svc: AuthService, op: GetMyAPIKeyQuery, call: Call) -> ApiKeyResult:
    principal = call.principal
    row = await _owned(svc, op.api_key_id, principal.user_id)
    return ApiKeyResult(**api_key_from_row(row).model_dump())


async def _create(
    svc: AuthService,
    principal: Principal,
    *,
    user_id: str,
    name: str,
    description: str,
    expires_at: str | None,
    self_service: bool,
) -> ApiKeyCreated:
    store = svc.store
    created = now()
    expiry = None
    if expires_at is not None:
        latest = created + timedelta(days=SELF_SERVICE_DAYS) if self_service else None
        expiry = _expiry(expires_at, latest=latest)
    secret = new_api_key()
    row: dict[str, Any] = {
        "api_key_id": str(uuid.uuid4()),
        "api_key_name": name,
        "description": description,
        "user_id": user_id,
        "created_by": principal.user_id,
        "created_at": ts(created),
        "updated_at": ts(created),
        "expires_at": ts(expiry) if expiry else None,
        "is_active": 1,
        "key_hash": sha256_hex(secret),
        "admin_expires_at": ts(expiry) if expiry and not self_service else None,
    }
    async with store.transaction():
        if not self_service and not await store.roles_of(user_id):
            raise ValidationError(
                f"User '{user_id}' holds no role; give them one first (user roles).",
                details={"field": "user_id", "value": user_id, "expected": "a user with a role assignment"},
            )
        await store.insert_api_key(row)
    record = api_key_from_row(row)
    return ApiKeyCreated(
        **record.model_dump(),
        api_key=secret,
        message="API key created. Store the secret now: it cannot be shown again.",
    )


@handlers.on(CreateAPIKeyCommand)
async def create_api_key(svc: AuthService, op: CreateAPIKeyCommand, call: Call) -> ApiKeyCreated:
    principal = call.principal
    return await _create(
        svc,
        principal,
        user_id=op.user_id,
        name=op.api_key_name,
        description=op.description,
        expires_at=op.expires_at,
        self_service=False,
    )


@handlers.on(CreateMyAPIKeyCommand)
async def create_my_api_key(svc: AuthService, op: CreateMyAPIKeyCommand, call: Call) -> ApiKeyCreated:
    principal = call.principal
    return await _create(
        svc,
        principal,
        user_id=principal.user_id,
        name=op.api_key_name,
        description=op.description,
        expires_at=op.expires_at,
        self_service=True,
    )


async def _update(svc: AuthService, op: UpdateAPIKeyCommand | UpdateMyAPIKeyCommand, owner: str | None) -> ApiKeyResult:
    """Change a key's description, activity or expiry; `owner` None is an administrator (no self-service limits)."""
    row = await _owned(svc, op.api_key_id, owner)
    given = op.model_fields_set
    changes: dict[str, Any] = {}
    if "description" in given:
        changes["description"] = op.description
    if "is_active" in given:
        changes |= _activity_changes(op, row, admin=owner is None)
    if "expires_at" in given:
        changes |= _expiry_changes(op.expires_at, row, admin=owner is None)
    changes["updated_at"] = ts(now())
    updated = await _write_update(svc.store, op.api_key_id, changes, owner)
    return ApiKeyResult(**api_key_from_row(updated).model_dump(), message="API key updated.")


def _activity_changes(op: UpdateAPIKeyCommand | UpdateMyAPIKeyCommand, row: Row, *, admin: bool) -> dict[str, Any]:
    """An administrator's deactivation sticks: only an administrator reactivates that key."""
    active = op.is_active == "true"
    if admin:
        return {"is_active": 1 if active else 0, "admin_deactivated": 0 if active else 1}
    if active and row["admin_deactivated"]:
        raise PermissionDeniedError(
            f"API key '{op.api_key_id}' was deactivated by an administrator; only an administrator can reactivate it.",
            details={"field": "is_active", "value": "true", "expected": "an administrator's decision"},
        )
    return {"is_active": 1 if active else 0}


def _expiry_changes(expires_at: str | None, row: Row, *, admin: bool) -> dict[str, Any]:
    """A new expiry: self-service stays within its window and under an administrator's expiry."""
    if expires_at is None:
        return {"expires_at": None, "admin_expires_at": None} if admin else {"expires_at": None}
    if admin:
        expiry = ts(_expiry(expires_at, latest=None))
        return {"expires_at": expiry, "admin_expires_at": expiry}
    ceiling = parse_ts(row["admin_expires_at"]) if row["admin_expires_at"] else None
    if ceiling is not None and _expiry(expires_at, latest=None) > ceiling:
        raise PermissionDeniedError(
            f"An administrator set this key to expire at {ts(ceiling)}; self-service cannot extend it.",
            details={"field": "expires_at", "value": expires_at[:64], "expected": f"<= {ts(ceiling)}"},
        )
    latest = parse_ts(row["created_at"]) + timedelta(days=SELF_SERVICE_DAYS)
    return {"expires_at": ts(_expiry(expires_at, latest=latest))}


async def _write_update(store: AuthStore, api_key_id: str, changes: dict[str, Any], owner: str | None) -> Row:
    """Write the changes unless an administrator changed the key since it was read; the key as written."""
    admin = owner is None
    async with store.transaction():
        done = await store.update_api_key(
            api_key_id,
            changes,
            owner=owner,
            not_admin_deactivated=not admin and changes.get("is_active") == 1,
            within_admin_expiry=None if admin or changes.get("expires_at") is None else changes["expires_at"],
        )
        if not done:  # gone, or an administrator changed it since it was read: decide on the row as it is now
            now_row = None if admin else await store.get_api_key(api_key_id)
            if now_row is not None and now_row["user_id"] == owner:
                raise PermissionDeniedError(
                    f"API key '{api_key_id}' was changed by an administrator meanwhile; read it and try again.",
                    details={"field": "api_key_id", "value": api_key_id, "expected": "an unchanged key"},
                )
            raise NotFoundError("api_key", api_key_id, f"API key '{api_key_id}' not found.")
        updated = await store.get_api_key(api_key_id)
    assert updated is not None
    return updated


@handlers.on(UpdateAPIKeyCommand)
async def update_api_key(svc: AuthService, op: UpdateAPIKeyCommand, call: Call) -> ApiKeyResult:
    return await _update(svc, op, None)


@handlers.on(UpdateMyAPIKeyCommand)
async def update_my_api_key(svc: AuthService, op: UpdateMyAPIKeyCommand, call: Call) -> ApiKeyResult:
    principal = call.principal
    return await _update(svc, op, principal.user_id)


async def _delete(svc: AuthService, api_key_id: str, owner: str | None) -> ApiKeyResult:
    store = svc.store
    row = await _owned(svc, api_key_id, owner)
    if not await store.delete_api_key(api_key_id):
        raise NotFoundError("api_key", api_key_id, f"API key '{api_key_id}' not found.")
    return ApiKeyResult(**api_key_from_row(row).model_dump(), message=f"API key '{api_key_id}' deleted.")


@handlers.on(DeleteAPIKeyCommand)
async def delete_api_key(svc: AuthService, op: DeleteAPIKeyCommand, call: Call) -> ApiKeyResult:
    return await _delete(svc, op.api_key_id, None)


@handlers.on(DeleteMyAPIKeyCommand)
async def delete_my_api_key(svc: AuthService, op: DeleteMyAPIKeyCommand, call: Call) -> ApiKeyResult:
    principal = call.principal
    return await _delete(svc, op.api_key_id, principal.user_id)
