"""All SQL of the auth service (tables of migration 3), portable between SQLite and PostgreSQL.

Every write to constraints, roles or user roles bumps the policy version in
`meta` within the same transaction, so each process sees the change on its
next decision (one primary-key read of that row). A write of user-role
assignments alone also counts itself in `auth.assignment_bumps`; any other
bump through this store draws a new random `auth.rules_stamp`. `rules_key`
(the version less that count, and the stamp) names what is compiled
(constraints, roles): it stays put across user-role writes, moves with any
other bump, whoever makes it (an unknown change is always recompiled), and
never names the state of a write that rolled back (its stamp was never seen).
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import AlreadyExistsError

from ..store.access import plan_where
from ..store.db import Database, Row
from .crypto import now, ts

if TYPE_CHECKING:
    from pluginsdk.models.plans import AccessPlan

__all__ = ["AuthStore", "new_record_id"]

VERSION_KEY = "auth.policy_version"
ASSIGNMENT_BUMPS_KEY = "auth.assignment_bumps"
RULES_STAMP_KEY = "auth.rules_stamp"
_MAX_ID = 1024
"""Longest audit actor and target id kept."""


def new_record_id() -> str:
    """An audit record id: sorts by time (nanoseconds, then random), so concurrent writers never collide."""
    return f"{time.time_ns():020d}-{secrets.token_hex(4)}"


def _in(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    params = {f"{name}{i}": v for i, v in enumerate(values)}
    return "(" + ", ".join(f":{k}" for k in params) + ")", params


class AuthStore:
    """Typed access to the auth tables on the engine's database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.on_bump: list[Callable[[], None]] = []
        """Called after each bump (this process drops its cached version at once)."""

    def transaction(self) -> Any:
        return self.db.transaction()

    # -- meta -----------------------------------------------------------------
    async def policy_version(self) -> int:
        row = await self.db.fetchone("SELECT value FROM meta WHERE key = :k", {"k": VERSION_KEY})
        return int(row["value"]) if row else 0

    async def rules_key(self) -> tuple[int, str]:
        """(policy version, rules key) in one statement; the key stays put across user-role writes (see the
        module docstring)."""
        rows = await self.db.fetchall(
            "SELECT key, value FROM meta WHERE key IN (:v, :a, :t)",
            {"v": VERSION_KEY, "a": ASSIGNMENT_BUMPS_KEY, "t": RULES_STAMP_KEY},
        )
        values = {r["key"]: str(r["value"]) for r in rows}
        version = int(values.get(VERSION_KEY, 0))
        return version, f"{version - int(values.get(ASSIGNMENT_BUMPS_KEY, 0))}:{values.get(RULES_STAMP_KEY, '')}"

    async def bump_policy_version(self, *, assignments_only: bool = False) -> int:
        """Bump the version (this row lock also orders concurrent policy writes); returns the write's own
        revision, read in the same statement (another write's bump cannot come between). The lock-out guard is
        the caller's to run after it, in the same transaction (`handlers/_common.bump`).

        `assignments_only`: the write changed user-role assignments and nothing else (the compiled rules stay).
        """
        row = await self.db.fetchone(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = :k RETURNING value",
            {"k": VERSION_KEY},
        )
        revision = int(row["value"]) if row else 0
        if assignments_only:
            await self.db.execute(
                "INSERT INTO meta (key, value) VALUES (:k, '1') ON CONFLICT (key) "
                "DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)",
                {"k": ASSIGNMENT_BUMPS_KEY},
            )
        else:
            await self.set_meta(RULES_STAMP_KEY, secrets.token_hex(8))
        if self.db.dialect == "postgresql":  # delivered to every listening process at commit (policy_watch.py)
            await self.db.execute("SELECT pg_notify('pluginsdk_policy', '')")
        for hook in self.on_bump:
            hook()
        return revision

    async def meta(self, key: str) -> str | None:
        row = await self.db.fetchone("SELECT value FROM meta WHERE key = :k", {"k": key})
        return str(row["value"]) if row else None

    async def meta_once(self, key: str, value: str) -> str:
        """Store `value` under `key` unless one is there already; returns the stored value (race-safe)."""
        await self.db.execute(
            "INSERT INTO meta (key, value) VALUES (:k, :v) ON CONFLICT (key) DO NOTHING", {"k": key, "v": value}
        )
        stored = await self.meta(key)
        assert stored is not None
        return stored

    async def set_meta(self, key: str, value: str) -> None:
        await self.db.execute(
            "INSERT INTO meta (key, value) VALUES (:k, :v) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            {"k": key, "v": value},
        )

    async def secret(self, key: str, nbytes: int = 32) -> str:
        """A random secret kept in `meta`, made once per store."""
        return await self.meta_once(key, secrets.token_urlsafe(nbytes))

    # -- audit log --------------------------------------------------------------
    async def append_audit(
        self,
        *,
        actor: str,
        action: str,
        target: tuple[str, str],
        before: Any = None,
        after: Any = None,
        revision: int | None = None,
    ) -> int:
        """Append one audit record (`before`/`after` already free of secrets) in the caller's transaction; the
        policy revision it carries: `revision` (the write's own) or the current one."""
        if revision is None:
            revision = await self.policy_version()
        await self.db.execute(
            "INSERT INTO auth_audit (record_id, at, actor, action, target_type, target_id, before_data, after_data,"
            " revision) VALUES (:id, :at, :actor, :action, :tt, :tid, :before, :after, :rev)",
            {
                "id": new_record_id(),
                "at": ts(now()),
                "actor": actor[:_MAX_ID],
                "action": action,
                "tt": target[0],
                "tid": target[1][:_MAX_ID],
                "before": None if before is None else json.dumps(before, default=str),
                "after": None if after is None else json.dumps(after, default=str),
                "rev": revision,
            },
        )
        return revision

    async def page_audit(self, filters: Mapping[str, Any], after: str | None, limit: int) -> list[Row]:
        """Records oldest first, after the id `after`, matching the equality/time filters."""
        where = []
        params: dict[str, Any] = {"limit": limit}
        for column in ("actor", "action", "target_type", "target_id"):
            value = filters.get(column)
            if value is not None:
                where.append(f"{column} = :{column}")
                params[column] = value
        for key, test in (
            ("since", "at >= :since"),
            ("until", "at < :until"),
            ("min_revision", "revision >= :min_revision"),
        ):
            if filters.get(key) is not None:
                where.append(test)
                params[key] = filters[key]
        if after is not None:
            where.append("record_id > :after")
            params["after"] = after
        sql = "SELECT * FROM auth_audit" + (" WHERE " + " AND ".join(where) if where else "")
        return await self.db.fetchall(sql + " ORDER BY record_id LIMIT :limit", params)

    # -- constraints ----------------------------------------------------------
    async def all_constraints(self) -> list[Row]:
        return await self.db.fetchall("SELECT constraint_id, data FROM auth_constraints ORDER BY constraint_id")

    async def page_constraints(self, after: str | None, limit: int) -> list[Row]:
        if after is None:
            return await self.db.fetchall(
                "SELECT constraint_id, data FROM auth_constraints ORDER BY constraint_id LIMIT :n", {"n": limit}
            )
        return await self.db.fetchall(
            "SELECT constraint_id, data FROM auth_constraints WHERE constraint_id > :a ORDER BY constraint_id LIMIT :n",
            {"a": after, "n": limit},
        )

    async def get_constraint(self, constraint_id: str) -> Row | None:
        return await self.db.fetchone(
            "SELECT constraint_id, data FROM auth_constraints WHERE constraint_id = :id", {"id": constraint_id}
        )

    async def existing_constraint_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            clause, params = _in("c", list(ids[i : i + 500]))
            rows = await self.db.fetchall(
                f"SELECT constraint_id FROM auth_constraints WHERE constraint_id IN {clause}", params
            )
            found.update(r["constraint_id"] for r in rows)
        return found

    async def insert_constraint(self, constraint_id: str, object_type: str, data: str, at: str) -> bool:
        """Insert a constraint unless its id exists (one statement: two callers racing never both insert, and
        the loser is told, not refused); whether it was inserted."""
        n = await self.db.execute(
            "INSERT INTO auth_constraints (constraint_id, object_type, data, created_at, updated_at)"
            " VALUES (:id, :type, :data, :at, :at) ON CONFLICT (constraint_id) DO NOTHING",
            {"id": constraint_id, "type": object_type, "data": data, "at": at},
        )
        return n > 0

    async def insert_constraints(self, rows: Iterable[Mapping[str, Any]]) -> None:
        await self.db.executemany(
            "INSERT INTO auth_constraints (constraint_id, object_type, data, created_at, updated_at)"
            " VALUES (:id, :type, :data, :at, :at)",
            list(rows),
        )

    async def update_constraint(self, constraint_id: str, object_type: str, data: str, at: str) -> bool:
        n = await self.db.execute(
            "UPDATE auth_constraints SET object_type = :type, data = :data, updated_at = :at WHERE constraint_id = :id",
            {"id": constraint_id, "type": object_type, "data": data, "at": at},
        )
        return n > 0

    async def seed_constraint(self, constraint_id: str, object_type: str, data: str, at: str) -> None:
        """A default constraint, unless one of that id exists."""
        await self.db.execute(
            "INSERT INTO auth_constraints (constraint_id, object_type, data, created_at, updated_at)"
            " VALUES (:id, :type, :data, :at, :at) ON CONFLICT (constraint_id) DO NOTHING",
            {"id": constraint_id, "type": object_type, "data": data, "at": at},
        )

    async def delete_constraint(self, constraint_id: str) -> bool:
        n = await self.db.execute("DELETE FROM auth_constraints WHERE constraint_id = :id", {"id": constraint_id})
        return n > 0

    # -- roles ------------------------------------------------------------------
    async def list_roles(self, access: AccessPlan | None = None) -> list[Row]:
        """Every role by name: only those `access` (the caller's query plan) allows, when given."""
        allowed, params = plan_where(access, "role", self.db.dialect)
        where = "" if allowed is None else f" WHERE {allowed}"
        return await self.db.fetchall(f"SELECT * FROM auth_roles{where} ORDER BY role_name", params)

    async def get_role(self, role_name: str) -> Row | None:
        return await self.db.fetchone("SELECT * FROM auth_roles WHERE role_name = :n", {"n": role_name})

    async def existing_roles(self, names: Sequence[str]) -> set[str]:
        if not names:
            return set()
        clause, params = _in("r", list(names))
        rows = await self.db.fetchall(f"SELECT role_name FROM auth_roles WHERE role_name IN {clause}", params)
        return {r["role_name"] for r in rows}

    async def insert_role(self, row: Mapping[str, Any]) -> None:
        if await self.get_role(row["role_name"]) is not None:
            raise AlreadyExistsError("role", row["role_name"], f"Role '{row['role_name']}' already exists.")
        await self.db.execute(
            "INSERT INTO auth_roles (role_name, id, description, source, source_identifier, mfa_required, created_on)"
            " VALUES (:role_name, :id, :description, :source, :source_identifier, :mfa_required, :created_on)",
            row,
        )

    async def update_role(self, role_name: str, changes: Mapping[str, Any]) -> bool:
        allowed = {"description", "source", "source_identifier", "mfa_required"}
        sets = [f"{k} = :{k}" for k in changes if k in allowed]
        if not sets:
            return await self.get_role(role_name) is not None
        n = await self.db.execute(
            f"UPDATE auth_roles SET {', '.join(sets)} WHERE role_name = :role_name",
            {**{k: v for k, v in changes.items() if k in allowed}, "role_name": role_name},
        )
        return n > 0

    async def delete_role(self, role_name: str) -> bool:
        return await self.db.execute("DELETE FROM auth_roles WHERE role_name = :n", {"n": role_name}) > 0

    # -- user roles --------------------------------------------------------------
    async def seed_role(self, role_name: str, description: str, at: str) -> None:
        """A built-in role, unless one of that name exists."""
        await self.db.execute(
            "INSERT INTO auth_roles (role_name, id, description, source, source_identifier, mfa_required,"
            " created_on) VALUES (:n, :id, :d, 'INTERNAL_SYSTEM', NULL, 0, :at)"
            " ON CONFLICT (role_name) DO NOTHING",
            {"n": role_name, "id": str(uuid.uuid4()), "d": description, "at": at},
        )

    async def roles_of(self, user_id: str) -> list[str]:
        rows = await self.db.fetchall(
            "SELECT role_name FROM auth_user_roles WHERE user_id = :u ORDER BY role_name", {"u": user_id}
        )
        return [r["role_name"] for r in rows]

    async def user_role_rows(self, user_id: str | None = None, access: AccessPlan | None = None) -> list[Row]:
        """Assignments by user and role (of one user, when given); with `access` (the caller's query plan on
        `userRole`) only those it allows, decided per assignment on `userId` and `roleName` — as `check_access`
        and the writes (`objects._user_roles`) decide one."""
        allowed, params = plan_where(access, "userRole", self.db.dialect)
        where = {"u": user_id} if user_id is not None else {}
        conditions = [c for c in ("user_id = :u" if where else None, allowed) if c]
        clause = f" WHERE {' AND '.join(f'({c})' for c in conditions)}" if conditions else ""
        return await self.db.fetchall(
            f"SELECT * FROM auth_user_roles{clause} ORDER BY user_id, role_name",
            {**params, **where},
        )

    async def add_user_roles(self, user_id: str, role_names: Sequence[str], at: str) -> None:
        await self.db.executemany(
            "INSERT INTO auth_user_roles (user_id, role_name, created_on) VALUES (:u, :r, :at)",
            [{"u": user_id, "r": r, "at": at} for r in role_names],
        )

    async def seed_user_role(self, user_id: str, role_name: str, at: str) -> None:
        """An assignment, unless it exists."""
        await self.db.execute(
            "INSERT INTO auth_user_roles (user_id, role_name, created_on) VALUES (:u, :r, :at)"
            " ON CONFLICT (user_id, role_name) DO NOTHING",
            {"u": user_id, "r": role_name, "at": at},
        )

    async def delete_user_roles(self, user_id: str, role_names: Sequence[str] | None = None) -> int:
        if role_names is None:
            return await self.db.execute("DELETE FROM auth_user_roles WHERE user_id = :u", {"u": user_id})
        if not role_names:
            return 0
        clause, params = _in("r", list(role_names))
        return await self.db.execute(
            f"DELETE FROM auth_user_roles WHERE user_id = :u AND role_name IN {clause}", {**params, "u": user_id}
        )

    # -- managed users -----------------------------------------------------------
    async def get_user(self, user_id: str) -> Row | None:
        return await self.db.fetchone("SELECT * FROM auth_users WHERE user_id = :u", {"u": user_id})

    async def page_users(self, after: str | None, limit: int) -> list[Row]:
        if after is None:
            return await self.db.fetchall("SELECT * FROM auth_users ORDER BY user_id LIMIT :n", {"n": limit})
        return await self.db.fetchall(
            "SELECT * FROM auth_users WHERE user_id > :a ORDER BY user_id LIMIT :n", {"a": after, "n": limit}
        )

    async def mfa_user_ids(self) -> set[str]:
        """Managed users with a second factor enrolled."""
        return {r["user_id"] for r in await self.db.fetchall("SELECT user_id FROM auth_users WHERE mfa_enabled = 1")}

    async def insert_user(self, row: Mapping[str, Any]) -> None:
        if await self.get_user(row["user_id"]) is not None:
            raise AlreadyExistsError("user", row["user_id"], f"User '{row['user_id']}' already exists.")
        cols = ", ".join(row)
        await self.db.execute(f"INSERT INTO auth_users ({cols}) VALUES ({', '.join(':' + c for c in row)})", row)

    async def update_user(self, user_id: str, changes: Mapping[str, Any]) -> bool:
        sets = ", ".join(f"{k} = :{k}" for k in changes)
        return (
            await self.db.execute(
                f"UPDATE auth_users SET {sets} WHERE user_id = :user_id", {**changes, "user_id": user_id}
            )
            > 0
        )

    async def delete_user(self, user_id: str) -> bool:
        """The user, their sessions and their API keys, together."""
        await self.db.execute("DELETE FROM auth_sessions WHERE user_id = :u", {"u": user_id})
        await self.db.execute("DELETE FROM auth_api_keys WHERE user_id = :u", {"u": user_id})
        return await self.db.execute("DELETE FROM auth_users WHERE user_id = :u", {"u": user_id}) > 0

    # -- API keys -------------------------------------------------------------------
    async def insert_api_key(self, row: Mapping[str, Any]) -> None:
        dup = await self.db.fetchone(
            "SELECT 1 AS x FROM auth_api_keys WHERE user_id = :u AND api_key_name = :n",
            {"u": row["user_id"], "n": row["api_key_name"]},
        )
        if dup:
            raise AlreadyExistsError(
                "api_key",
                row["api_key_name"],
                f"User '{row['user_id']}' already has an API key named '{row['api_key_name']}'.",
                details={"field": "api_key_name", "value": row["api_key_name"]},
            )
        cols = ", ".join(row)
        await self.db.execute(f"INSERT INTO auth_api_keys ({cols}) VALUES ({', '.join(':' + c for c in row)})", row)

    async def get_api_key(self, api_key_id: str) -> Row | None:
        return await self.db.fetchone("SELECT * FROM auth_api_keys WHERE api_key_id = :id", {"id": api_key_id})

    async def api_key_by_hash(self, key_hash: str) -> Row | None:
        """The key's row, and the policy version (`policy_version`) read in the same statement: the request
        the key authenticates is decided on that version without a statement of its own."""
        return await self.db.fetchone(
            "SELECT k.*, (SELECT value FROM meta WHERE key = :v) AS policy_version"
            " FROM auth_api_keys k WHERE k.key_hash = :h",
            {"h": key_hash, "v": VERSION_KEY},
        )

    async def page_api_keys(self, user_id: str | None, after: tuple[str, str] | None, limit: int) -> list[Row]:
        conds, params = [], {"n": limit}
        if user_id is not None:
            conds.append("user_id = :u")
            params["u"] = user_id  # type: ignore[assignment]
        if after is not None:
            conds.append("(created_at > :ac OR (created_at = :ac AND api_key_id > :ai))")
            params["ac"], params["ai"] = after  # type: ignore[assignment]
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        return await self.db.fetchall(
            f"SELECT * FROM auth_api_keys{where} ORDER BY created_at, api_key_id LIMIT :n", params
        )

    async def update_api_key(
        self,
        api_key_id: str,
        changes: Mapping[str, Any],
        *,
        owner: str | None = None,
        not_admin_deactivated: bool = False,
        within_admin_expiry: str | None = None,
    ) -> bool:
        """Apply `changes`; False when no row qualified. The conditions are checked in the same statement, so a
        concurrent administrator's change cannot be overwritten by a self-service one read before it."""
        sets = ", ".join(f"{k} = :{k}" for k in changes)
        conds = ["api_key_id = :api_key_id"]
        params: dict[str, Any] = {**changes, "api_key_id": api_key_id}
        if owner is not None:
            conds.append("user_id = :c_owner")
            params["c_owner"] = owner
        if not_admin_deactivated:
            conds.append("admin_deactivated = 0")
        if within_admin_expiry is not None:
            conds.append("(admin_expires_at IS NULL OR admin_expires_at >= :c_expiry)")
            params["c_expiry"] = within_admin_expiry
        n = await self.db.execute(f"UPDATE auth_api_keys SET {sets} WHERE {' AND '.join(conds)}", params)
        return n > 0

    async def delete_api_key(self, api_key_id: str) -> bool:
        return await self.db.execute("DELETE FROM auth_api_keys WHERE api_key_id = :id", {"id": api_key_id}) > 0

    async def claim_totp_step(self, user_id: str, step: int) -> bool:
        """Record `step` as the user's last accepted TOTP time-step; False when it (or a later one) was
        accepted before: a code is good once (one conditional UPDATE, so racing sign-ins cannot both win)."""
        n = await self.db.execute(
            "UPDATE auth_users SET totp_last_step = :s"
            " WHERE user_id = :u AND (totp_last_step IS NULL OR totp_last_step < :s)",
            {"u": user_id, "s": step},
        )
        return n > 0

    async def confirm_totp(self, user_id: str, pending: str, session_id: str, step: int, at: str) -> bool:
        """Make the pending TOTP secret the active one, if it is still the one `session_id` started (a set-up
        started since, or a reset, leaves it pending or gone: False)."""
        n = await self.db.execute(
            "UPDATE auth_users SET totp_secret = totp_pending, totp_pending = NULL, totp_pending_session = NULL,"
            " totp_last_step = :s, mfa_enabled = 1, updated_at = :at"
            " WHERE user_id = :u AND totp_pending = :p AND totp_pending_session = :sid",
            {"u": user_id, "p": pending, "sid": session_id, "s": step, "at": at},
        )
        return n > 0

    async def clear_mfa(self, user_id: str, at: str) -> bool:
        """Turn the user's MFA off (secret and any pending set-up gone); their sessions stop being multi-factor.
        False when there is no such user."""
        n = await self.db.execute(
            "UPDATE auth_users SET totp_secret = NULL, totp_pending = NULL, totp_pending_session = NULL,"
            " mfa_enabled = 0, updated_at = :at WHERE user_id = :u",
            {"u": user_id, "at": at},
        )
        await self.db.execute("UPDATE auth_sessions SET mfa = 0 WHERE user_id = :u AND mfa <> 0", {"u": user_id})
        return n > 0

    # -- sessions -----------------------------------------------------------------------
    async def insert_session(self, row: Mapping[str, Any]) -> None:
        cols = ", ".join(row)
        await self.db.execute(f"INSERT INTO auth_sessions ({cols}) VALUES ({', '.join(':' + c for c in row)})", row)

    async def session_by_refresh(self, refresh_hash: str) -> Row | None:
        return await self.db.fetchone("SELECT * FROM auth_sessions WHERE refresh_hash = :h", {"h": refresh_hash})

    async def session_state(self, session_id: str) -> Row | None:
        """The session and its user in one read (None when either is gone)."""
        return await self.db.fetchone(
            "SELECT s.session_id, s.user_id, s.mfa, s.revoked, s.expires_at, u.enabled, u.email"
            " FROM auth_sessions s JOIN auth_users u ON u.user_id = s.user_id WHERE s.session_id = :s",
            {"s": session_id},
        )

    async def set_session_mfa(self, session_id: str) -> None:
        await self.db.execute("UPDATE auth_sessions SET mfa = 1 WHERE session_id = :s", {"s": session_id})

    async def revoke_session(self, session_id: str) -> None:
        await self.db.execute("UPDATE auth_sessions SET revoked = 1 WHERE session_id = :s", {"s": session_id})

    async def revoke_sessions(self, user_id: str, keep: str | None = None) -> None:
        await self.db.execute(
            "UPDATE auth_sessions SET revoked = 1 WHERE user_id = :u AND session_id <> :k",
            {"u": user_id, "k": keep or ""},
        )

    # -- signing keys -------------------------------------------------------------------
    async def signing_keys(self) -> list[Row]:
        return await self.db.fetchall("SELECT * FROM auth_signing_keys WHERE active = 1 ORDER BY created_at")

    async def insert_signing_key(self, row: Mapping[str, Any]) -> None:
        await self.db.execute(
            "INSERT INTO auth_signing_keys (kid, alg, private_key, public_jwk, created_at, active)"
            " VALUES (:kid, :alg, :private_key, :public_jwk, :created_at, 1)",
            row,
        )

    # -- login profiles ----------------------------------------------------------------
    async def get_profile(self, user_id: str) -> Row | None:
        return await self.db.fetchone("SELECT * FROM auth_login_profiles WHERE user_id = :u", {"u": user_id})

    async def put_profile(self, user_id: str, email: str | None, data: str, at: str) -> None:
        await self.db.execute(
            "INSERT INTO auth_login_profiles (user_id, email, data, updated_at) VALUES (:u, :e, :d, :at)"
            " ON CONFLICT (user_id) DO UPDATE SET email = excluded.email, data = excluded.data,"
            " updated_at = excluded.updated_at",
            {"u": user_id, "e": email, "d": data, "at": at},
        )

    # -- federated sign-in ----------------------------------------------------------
    async def insert_pending_sign_in(self, state_hash: str, data: str, expires_at: float, limit: int) -> bool:
        """Keep a sign-in begun at the identity provider; False when `limit` live ones are kept already."""
        await self.db.execute("DELETE FROM auth_federation_pending WHERE expires_at <= :t", {"t": time.time()})
        row = await self.db.fetchone("SELECT COUNT(*) AS n FROM auth_federation_pending")
        if row is not None and int(row["n"]) >= limit:
            return False
        await self.db.execute(
            "INSERT INTO auth_federation_pending (state_hash, data, expires_at) VALUES (:h, :d, :e)",
            {"h": state_hash, "d": data, "e": expires_at},
        )
        return True

    async def take_pending_sign_in(self, state_hash: str) -> str | None:
        """The live sign-in of this state, removed (a state is good once): its sealed data, or None."""
        row = await self.db.fetchone(
            "DELETE FROM auth_federation_pending WHERE state_hash = :h RETURNING data, expires_at", {"h": state_hash}
        )
        if row is None or float(row["expires_at"]) <= time.time():
            return None
        return str(row["data"])

    async def remember_assertion(self, assertion_id: str, expires_at: float) -> bool:
        """Note a SAML assertion as used; False when it was used before (a replay)."""
        await self.db.execute("DELETE FROM auth_saml_assertions WHERE expires_at <= :t", {"t": time.time()})
        return (
            await self.db.execute(
                "INSERT INTO auth_saml_assertions (assertion_id, expires_at) VALUES (:a, :e) "
                "ON CONFLICT (assertion_id) DO NOTHING",
                {"a": assertion_id, "e": expires_at},
            )
            > 0
        )

    # -- sign-in limits (auth/throttle.py) -------------------------------------------
    async def sign_in_locks(self, keys: Sequence[str]) -> list[float]:
        """Until when each of the keys that is locked is locked."""
        clause, params = _in("k", list(keys))
        rows = await self.db.fetchall(
            f"SELECT locked_until FROM auth_sign_in_failures WHERE key IN {clause} AND locked_until IS NOT NULL",
            params,
        )
        return [float(r["locked_until"]) for r in rows]

    async def count_sign_in_failure(self, key: str, moment: float, start: float) -> int:
        """One more failure of `key`; a count that began before `start` begins again. The count after it."""
        row = await self.db.fetchone(
            "INSERT INTO auth_sign_in_failures (key, failures, first_at, locked_until) VALUES (:k, 1, :now, NULL)"
            " ON CONFLICT (key) DO UPDATE SET failures = CASE WHEN auth_sign_in_failures.first_at < :start THEN 1"
            " ELSE auth_sign_in_failures.failures + 1 END, first_at = CASE WHEN auth_sign_in_failures.first_at"
            " < :start THEN :now ELSE auth_sign_in_failures.first_at END RETURNING failures",
            {"k": key, "now": moment, "start": start},
        )
        return int(row["failures"]) if row else 0

    async def lock_sign_in(self, key: str, moment: float, until: float, limit: int) -> bool:
        """Lock `key` until `until` if its count reached `limit`; True for the caller that locked it."""
        return bool(
            await self.db.execute(
                "UPDATE auth_sign_in_failures SET failures = 0, first_at = :now, locked_until = :until"
                " WHERE key = :k AND failures >= :limit",
                {"k": key, "now": moment, "until": until, "limit": limit},
            )
        )

    async def sweep_sign_in_failures(self, start: float, moment: float) -> None:
        """Delete counts that began before `start` and are not locked after `moment`."""
        await self.db.execute(
            "DELETE FROM auth_sign_in_failures WHERE first_at < :start"
            " AND (locked_until IS NULL OR locked_until < :now)",
            {"start": start, "now": moment},
        )

    async def clear_sign_in_failures(self, key: str) -> None:
        await self.db.execute("DELETE FROM auth_sign_in_failures WHERE key = :k", {"k": key})
