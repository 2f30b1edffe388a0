"""Database errors turned into what callers may see: a unique-key race is 409 ALREADY_EXISTS, anything
else a `StoreFailure` whose text carries no parameter value.

Why here and not in each handler: two processes may both pass a handler's "does it exist?" check
(PostgreSQL's READ COMMITTED, or SQLite statements outside a transaction) and the loser's INSERT then
fails on the unique key. Mapping that once, in the database layer, covers every check-then-insert path.
Driver messages are never forwarded: PostgreSQL's `Key (col)=(value)` detail and asyncpg's
`invalid input for query argument $1: <value>` would put values (hashes, secrets) into responses and logs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pluginsdk.errors import AlreadyExistsError

__all__ = ["StoreFailure", "already_exists", "insert_columns"]


class Entity(NamedTuple):
    kind: str
    """`entity_type` of the error (as the handlers name it)."""
    label: str
    """How the message names it."""
    id_columns: tuple[str, ...]
    """Columns that may be shown, in order; a violated key outside them is reported without values."""


_TABLES: dict[str, Entity] = {
    "templates": Entity("template", "Template", ("template_id",)),
    "requests": Entity("request", "Request", ("request_id",)),
    "machines": Entity("machine", "Machine", ("machine_id",)),
    "auth_constraints": Entity("constraint", "Constraint", ("constraint_id",)),
    "auth_roles": Entity("role", "Role", ("role_name",)),
    "auth_user_roles": Entity("user_role", "Role assignment", ("user_id", "role_name")),
    "auth_users": Entity("user", "User", ("user_id",)),
    "auth_api_keys": Entity("api_key", "API key", ("user_id", "api_key_name")),
    "auth_sessions": Entity("session", "Session", ()),
    "auth_signing_keys": Entity("signing_key", "Signing key", ("kid",)),
    "auth_login_profiles": Entity("login_profile", "Login profile", ("user_id",)),
    "local_instances": Entity("instance", "Instance", ("instance_id",)),
    "meta": Entity("meta", "Setting", ("key",)),
}

_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)\s*\(([^)]*)\)\s*VALUES\s*\(([^)]*)\)", re.IGNORECASE | re.DOTALL)


class StoreFailure(RuntimeError):
    """A database error other than a unique-key race; the text names the statement, never its values."""


def insert_columns(sql: str) -> tuple[str | None, dict[str, str]]:
    """The table of an `INSERT ... (cols) VALUES (:params)` and each column's parameter name."""
    m = _INSERT.match(sql)
    if m is None:
        return None, {}
    cols = [c.strip() for c in m.group(2).split(",")]
    vals = [v.strip() for v in m.group(3).split(",")]
    return m.group(1), {c: v[1:] for c, v in zip(cols, vals, strict=False) if v.startswith(":")}


def already_exists(
    table: str | None, columns: Sequence[str], sql: str, rows: Sequence[Mapping[str, Any]]
) -> AlreadyExistsError:
    """The 409 for a unique key (`table`, `columns`) an INSERT of `rows` ran into.

    Only the entity's identifying columns are echoed, and only when every row agrees on them (after an
    `executemany` the driver does not say which row collided); a secret column (a hash) never is.
    """
    insert_table, params = insert_columns(sql)
    table = table or insert_table
    entity = _TABLES.get(table or "", Entity("object", "Object", ()))
    shown: dict[str, Any] = {}
    if columns and set(columns) <= set(entity.id_columns):
        for col in entity.id_columns:
            values = {row.get(params.get(col, col)) for row in rows} if rows else set()
            if len(values) == 1 and (value := values.pop()) is not None:
                shown[col] = value
    if not shown:
        message = f"{entity.label} already exists (created at the same moment by another caller)."
        return AlreadyExistsError(entity.kind, "", message, details={"field": entity.kind})
    name = " / ".join(str(v) for v in shown.values())
    field = list(shown)[-1]
    return AlreadyExistsError(
        entity.kind,
        str(shown[field]),
        f"{entity.label} '{name}' already exists.",
        details={"field": field, "value": shown[field]},
    )
