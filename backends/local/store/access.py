"""Listings filtered by the caller's query plan in SQL, so a page is full and its total counts what the caller
may read — and what the caller may not read costs nothing to skip (the plan's tests run on indexed columns).

`COLUMNS` maps each object type's criterion fields to the columns holding them, exactly as the authorizer
reads them off the model (`request_attrs`, `machine_attrs`, `template_attrs`: a request's `userId` is
`created_by`; a role's `roleName` is `auth_roles.role_name`);
`tests/policy/test_listing_plans.py` holds the listings to `check_access`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pluginsdk.plans import Column, to_sql

if TYPE_CHECKING:
    from pluginsdk.models.plans import AccessPlan

__all__ = ["COLUMNS", "MAX_PLAN_PARAMETERS", "plan_where"]

MAX_PLAN_PARAMETERS: Final = 10_000
"""A plan needing more parameters than this (a subject granted that many literal values) is not sent to the
database (SQLite and asyncpg cap a statement's parameters near 32,767): the listing then pages unfiltered and
the handlers' decision per item (`Engine.visible`, which every listing still applies) drops what the caller may
not read — correct, with short pages, rather than a failed statement."""

COLUMNS: Final[dict[str, dict[str, str | Column]]] = {
    "template": {
        "templateId": Column("template_id", not_null=True),
        "providerApi": Column("provider_api", not_null=True),
    },
    "role": {"roleName": Column("role_name", not_null=True)},
    "userRole": {  # one row per assignment (`AuthStore.user_role_rows`), as the check decides one
        "userId": Column("user_id", not_null=True),
        "roleName": Column("role_name", not_null=True),
    },
    "request": {
        "requestId": Column("request_id", not_null=True),
        "templateId": "template_id",
        "userId": "created_by",
    },
    "machine": {
        "machineId": Column("machine_id", not_null=True),
        "templateId": Column("template_id", not_null=True),
        "requestId": Column("request_id", not_null=True),
    },
}


def plan_where(plan: AccessPlan | None, object_type: str, dialect: str) -> tuple[str | None, dict[str, Any]]:
    """(the plan as a condition on `object_type`'s table, its parameters); (None, {}) when it allows every row.
    `never` is the condition `1 = 0` (a listing still answers, with nothing)."""
    if plan is None or plan.kind == "always":
        return None, {}
    where = to_sql(plan, COLUMNS[object_type], dialect="postgresql" if dialect == "postgresql" else "sqlite")
    if where.sql == "1 = 1":
        return None, {}
    assert isinstance(where.params, dict)
    if len(where.params) > MAX_PLAN_PARAMETERS:
        return None, {}
    return where.sql, where.params
