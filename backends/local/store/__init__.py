"""The engine's store: templates, requests and machines (auth keeps its own tables beside them).

Each row keeps its indexed columns plus the whole model as JSON in `data`;
`data` is authoritative, columns exist for filtering and ordering. All SQL of
the provisioning service lives in this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pluginsdk import models
from pluginsdk.errors import AlreadyExistsError
from pluginsdk.models.detached import detached
from pluginsdk.models.statuses import MachineStatus, RequestType

from .claims import Claims
from .db import Database, Row, open_database
from .schema import migrate

if TYPE_CHECKING:  # the classes are read through `models` when first used: a call builds only those it needs
    from pluginsdk.models import Machine, Request, Template
    from pluginsdk.models.plans import AccessPlan

    from .changes import ChangeFeed
    from .quotas import QuotaLedger

__all__ = ["Store", "open_store"]

_ACTIVE_MACHINE = tuple(s.value for s in MachineStatus if s.active)
_INSERT_REQUEST = (
    "INSERT INTO requests (request_id, request_type, status, template_id, provider_name, created_by, created_at,"
    " updated_at, completed_at, data)"
)
_REQUEST_VALUES = ":id, :type, :status, :tpl, :prov, :by, :c, :u, :done, :data"
_GONE_SQL = "(" + ", ".join(f"'{s.value}'" for s in MachineStatus if s.gone) + ")"


def _ts(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt is not None else None


def _active(configuration: Any) -> int:
    """A template's `active` column: 0 only when its configuration switches it off (`active: false`)."""
    return 0 if isinstance(configuration, Mapping) and configuration.get("active", True) is False else 1


def _in(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """An IN (...) list with one named parameter per value (portable, no string interpolation of values)."""
    return _placeholders(name, len(values)), {f"{name}{i}": v for i, v in enumerate(values)}


@lru_cache(maxsize=256)
def _placeholders(name: str, count: int) -> str:
    """`(:name0, :name1, ...)`, written once per name and count (a status read names one request each time)."""
    return "(" + ", ".join(f":{name}{i}" for i in range(count)) + ")"


def _requests(rows: list[Row]) -> tuple[Request, ...]:
    """Stored requests as `Database.read_kept` keeps them (handed out `detached`)."""
    return tuple(models.Request.model_validate_json(row["data"]) for row in rows)


def _owned_machines(rows: list[Row]) -> tuple[tuple[str, Machine], ...]:
    """(owner's id, stored machine) of each row, as `Database.read_kept` keeps them (handed out `detached`)."""
    return tuple((row["owner_id"], models.Machine.model_validate_json(row["data"])) for row in rows)


class Store:
    """Typed access to the provisioning tables."""

    def __init__(self, db: Database, claim_seconds: float = 60.0) -> None:
        self.db = db
        self.claims = Claims(db, claim_seconds)
        self._quotas: QuotaLedger | None = None
        self._changes: ChangeFeed | None = None

    @property
    def quotas(self) -> QuotaLedger:
        """The quota reservations (`quotas.py`), loaded by the first launch or release: a read never pays for it."""
        if self._quotas is None:
            from .quotas import QuotaLedger

            self._quotas = QuotaLedger(self.db)
        return self._quotas

    @property
    def changes(self) -> ChangeFeed:
        """The change feed (`changes.py`), loaded by the first watcher: only a server's progress streams use it."""
        if self._changes is None:
            from .changes import ChangeFeed

            self._changes = ChangeFeed(self.db)
        return self._changes

    async def aclose(self) -> None:
        if self._changes is not None:
            await self._changes.aclose()
        await self.db.aclose()

    def transaction(self) -> Any:
        return self.db.transaction()

    @property
    def dialect(self) -> str:
        """The database's dialect (`sqlite` or `postgresql`)."""
        return self.db.dialect

    # -- templates --------------------------------------------------------
    async def get_template(self, template_id: str) -> Template | None:
        row = await self.db.fetchone("SELECT data FROM templates WHERE template_id = :id", {"id": template_id})
        return models.Template.from_stored(row["data"], key=template_id) if row else None

    async def page_templates(
        self,
        *,
        provider_apis: Sequence[str] | None = None,
        active_only: bool = False,
        limit: int | None = None,
        offset: int = 0,
        access: AccessPlan | None = None,
    ) -> tuple[list[Template], int]:
        """Stored templates by id (code-point order, as Python sorts), and the total that matched before
        limit/offset: of these provider APIs, not switched off (`configuration.active` false) when `active_only`,
        only those `access` (the caller's query plan) allows, when given."""
        conds: list[str] = []
        params: dict[str, Any] = {}
        if provider_apis is not None:
            clause, params = _in("api", list(provider_apis) or [""])
            conds.append(f"provider_api IN {clause}")
        if active_only:
            conds.append("COALESCE(active, 1) <> 0")
        from .access import plan_where

        allowed, plan_params = plan_where(access, "template", self.db.dialect)
        if allowed is not None:
            conds.append(f"({allowed})")
            params.update(plan_params)
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        total_row = await self.db.fetchone(f"SELECT COUNT(*) AS n FROM templates{where}", params)
        order = ' COLLATE "C"' if self.db.dialect == "postgresql" else ""
        sql = f"SELECT template_id, data FROM templates{where} ORDER BY template_id{order}"
        if limit is not None:
            sql += " LIMIT :limit OFFSET :offset"
            params = {**params, "limit": limit, "offset": offset}
        elif offset:
            sql += " LIMIT -1 OFFSET :offset" if self.db.dialect != "postgresql" else " OFFSET :offset"
            params = {**params, "offset": offset}
        rows = await self.db.fetchall(sql, params)
        found = (models.Template.from_stored(r["data"], key=r["template_id"]) for r in rows)
        return [t for t in found if t is not None], int(total_row["n"]) if total_row else 0

    async def fill_template_active(self) -> None:
        """Set the `active` column of rows written before it existed (read off their JSON, as the model reads it;
        a row that does not parse counts as active, as an unreadable configuration does)."""
        rows = await self.db.fetchall("SELECT template_id, data FROM templates WHERE active IS NULL")
        for r in rows:
            try:
                configuration = json.loads(r["data"]).get("configuration") or {}
            except (ValueError, AttributeError):
                configuration = {}
            await self.db.execute(
                "UPDATE templates SET active = :a WHERE template_id = :id AND active IS NULL",
                {"a": _active(configuration), "id": r["template_id"]},
            )

    async def stored_template_ids(self, template_ids: Sequence[str]) -> set[str]:
        """Which of these ids name a stored template (a stored template hides a file's of the same id)."""
        found: set[str] = set()
        for i in range(0, len(template_ids), 500):
            clause, params = _in("t", list(template_ids[i : i + 500]))
            rows = await self.db.fetchall(f"SELECT template_id FROM templates WHERE template_id IN {clause}", params)
            found.update(r["template_id"] for r in rows)
        return found

    async def insert_template(self, t: Template) -> None:
        async with self.db.transaction():
            if await self.db.fetchone("SELECT 1 AS x FROM templates WHERE template_id = :id", {"id": t.template_id}):
                raise AlreadyExistsError("template", t.template_id)
            await self.db.execute(
                "INSERT INTO templates (template_id, provider_api, data, created_at, updated_at, active)"
                " VALUES (:id, :api, :data, :c, :u, :active)",
                {
                    "id": t.template_id,
                    "api": t.provider_api,
                    "active": _active(t.configuration),
                    "data": t.model_dump_json(),
                    "c": _ts(t.created_at),
                    "u": _ts(t.updated_at),
                },
            )

    async def replace_template(self, t: Template) -> None:
        await self.db.execute(
            "UPDATE templates SET provider_api = :api, data = :data, updated_at = :u, active = :active"
            " WHERE template_id = :id",
            {
                "id": t.template_id,
                "api": t.provider_api,
                "data": t.model_dump_json(),
                "u": _ts(t.updated_at),
                "active": _active(t.configuration),
            },
        )

    async def delete_template(self, template_id: str) -> bool:
        return await self.db.execute("DELETE FROM templates WHERE template_id = :id", {"id": template_id}) > 0

    async def count_templates(self) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) AS n FROM templates")
        return int(row["n"]) if row else 0

    # -- requests ---------------------------------------------------------
    @staticmethod
    def _request_params(r: Request) -> dict[str, Any]:
        stored = r.model_copy(update={"machines": []})
        return {
            "id": r.request_id,
            "type": r.request_type.value,
            "status": r.status.value,
            "tpl": r.template_id,
            "prov": r.provider_name,
            "by": r.created_by,
            "c": _ts(r.created_at),
            "u": _ts(r.updated_at),
            "done": _ts(r.completed_at),
            "data": stored.model_dump_json(),
        }

    async def insert_request(self, r: Request) -> None:
        await self.db.execute(f"{_INSERT_REQUEST} VALUES ({_REQUEST_VALUES})", self._request_params(r))

    async def insert_request_within(
        self, r: Request, shares: Mapping[str, int], limits: Mapping[str, tuple[int, int]]
    ) -> tuple[bool, dict[str, int]]:
        """Record `r` with its reservation `shares` when every quota subject in `limits` (its limit, what the
        request adds to it) has room (`QuotaLedger.record_within`): whether it was recorded, and counts read."""
        return await self.quotas.record_within(
            f"{_INSERT_REQUEST} SELECT {_REQUEST_VALUES}", self._request_params(r), r.template_id or "", shares, limits
        )

    async def update_request(self, r: Request) -> None:
        await self.db.execute(
            "UPDATE requests SET status = :status, updated_at = :u, completed_at = :done, data = :data"
            " WHERE request_id = :id",
            self._request_params(r),
        )
        if r.status.terminal and r.request_type is RequestType.PROVISION:
            await self.quotas.release(r.request_id)  # a finished request reserves nothing

    async def get_request(self, request_id: str, *, for_update: bool = False) -> Request | None:
        """One request; `for_update` locks its row until the transaction ends (PostgreSQL; SQLite's
        BEGIN IMMEDIATE already serialises writers), so two processes never advance it at once."""
        if for_update:
            lock = " FOR UPDATE" if self.db.dialect == "postgresql" else ""
            row = await self.db.fetchone(f"SELECT data FROM requests WHERE request_id = :id{lock}", {"id": request_id})
            return models.Request.model_validate_json(row["data"]) if row else None
        sql = "SELECT data FROM requests WHERE request_id = :id"
        kept = await self.db.read_kept(sql, {"id": request_id}, _requests)
        return detached(kept[0]) if kept else None

    async def get_requests(self, request_ids: Sequence[str]) -> dict[str, Request]:
        if not request_ids:
            return {}
        clause, params = _in("r", list(request_ids))
        rows = await self.db.fetchall(f"SELECT data FROM requests WHERE request_id IN {clause}", params)
        out = (models.Request.model_validate_json(r["data"]) for r in rows)
        return {r.request_id: r for r in out}

    async def list_requests(
        self,
        *,
        statuses: Sequence[str] | None = None,
        template_id: str | None = None,
        request_type: str | None = None,
        provider_name: str | None = None,
        created_before: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        access: AccessPlan | None = None,
        active_as_of: datetime | None = None,
    ) -> tuple[list[Request], int]:
        """Requests newest first, and the total that matched before limit/offset: only those `access` (the
        caller's query plan) allows, when given; with `active_as_of`, those active at that time (created by
        then, and pending, running or finished after it) — a view that requests finishing leave unchanged."""
        where, params = self._request_filter(statuses, template_id, request_type, provider_name, created_before)
        if active_as_of is not None:
            view = "created_at <= :as_of AND (status IN ('pending', 'running') OR completed_at > :as_of)"
            where = f"{where} AND ({view})" if where else f" WHERE {view}"
            params = {**params, "as_of": _ts(active_as_of)}
        from .access import plan_where  # the query plan's SQL: imported by listings only

        allowed, plan_params = plan_where(access, "request", self.db.dialect)
        if allowed is not None:
            where = f"{where} AND ({allowed})" if where else f" WHERE {allowed}"
            params = {**params, **plan_params}
        total_row = await self.db.fetchone(f"SELECT COUNT(*) AS n FROM requests{where}", params)
        sql = f"SELECT data FROM requests{where} ORDER BY created_at DESC, request_id"
        if limit is not None:
            sql += " LIMIT :limit OFFSET :offset"
            params = {**params, "limit": limit, "offset": offset}
        rows = await self.db.fetchall(sql, params)
        return [models.Request.model_validate_json(r["data"]) for r in rows], int(total_row["n"]) if total_row else 0

    @staticmethod
    def _request_filter(
        statuses: Sequence[str] | None,
        template_id: str | None,
        request_type: str | None,
        provider_name: str | None,
        created_before: datetime | None,
    ) -> tuple[str, dict[str, Any]]:
        conds: list[str] = []
        params: dict[str, Any] = {}
        if statuses:
            clause, p = _in("s", list(statuses))
            conds.append(f"status IN {clause}")
            params.update(p)
        if template_id:
            conds.append("template_id = :tpl")
            params["tpl"] = template_id
        if request_type:
            conds.append("request_type = :type")
            params["type"] = request_type
        if provider_name:
            conds.append("provider_name = :prov")
            params["prov"] = provider_name
        if created_before is not None:
            conds.append("created_at < :before")
            params["before"] = _ts(created_before)
        return (" WHERE " + " AND ".join(conds)) if conds else "", params

    async def count_requests_by(self, column: str, template_id: str | None = None) -> dict[str, int]:
        if column not in ("status", "request_type"):
            raise ValueError(column)
        where = " WHERE template_id = :tpl" if template_id else ""
        rows = await self.db.fetchall(
            f"SELECT {column} AS k, COUNT(*) AS n FROM requests{where} GROUP BY {column}",
            {"tpl": template_id} if template_id else None,
        )
        return {r["k"]: int(r["n"]) for r in rows}

    async def active_request_ids(self) -> list[str]:
        rows = await self.db.fetchall(
            "SELECT request_id FROM requests WHERE status IN ('pending', 'running') ORDER BY created_at"
        )
        return [r["request_id"] for r in rows]

    async def delete_requests(self, request_ids: Sequence[str]) -> int:
        if not request_ids:
            return 0
        clause, params = _in("r", list(request_ids))
        async with self.db.transaction():  # never requests without their machines or the reverse
            await self.db.execute(f"DELETE FROM machines WHERE request_id IN {clause}", params)
            return await self.db.execute(f"DELETE FROM requests WHERE request_id IN {clause}", params)

    # -- machines ---------------------------------------------------------
    @staticmethod
    def _machine_params(m: Machine) -> dict[str, Any]:
        return {
            "id": m.machine_id,
            "req": m.request_id,
            "tpl": m.template_id,
            "status": m.status.value,
            "ret": m.return_request_id,
            "name": m.name,
            "prov": m.provider_name,
            "c": _ts(m.created_at),
            "u": _ts(m.updated_at),
            "data": m.model_dump_json(),
        }

    async def upsert_machines(self, machines: Iterable[Machine]) -> None:
        """Insert new machines and update known ones, except their return claim.

        A stored machine is updated only when the write holds the same claim (`return_request_id`) as the
        row and a gone machine stays gone: a write built from a copy read before another process claimed
        (or released) the machine is dropped for that row, never undoing the claim; the next reconciliation
        folds the provider's view in again. Claims move only through `reassign_machines`.
        """
        await self.db.executemany(
            "INSERT INTO machines (machine_id, request_id, template_id, status, return_request_id, name,"
            " provider_name, created_at, updated_at, data)"
            " VALUES (:id, :req, :tpl, :status, :ret, :name, :prov, :c, :u, :data)"
            " ON CONFLICT (machine_id) DO UPDATE SET status = excluded.status, name = excluded.name,"
            " updated_at = excluded.updated_at, data = excluded.data"
            " WHERE COALESCE(machines.return_request_id, '') = COALESCE(excluded.return_request_id, '')"
            f" AND (machines.status NOT IN {_GONE_SQL} OR excluded.status IN {_GONE_SQL})",
            [self._machine_params(m) for m in machines],
        )

    async def reassign_machines(self, machines: Sequence[Machine], held_by: Mapping[str, str | None]) -> list[Machine]:
        """Write machines whose return claim changes (claimed by a return, released, reclaimed), each only
        while it is not gone and its stored claim is still `held_by[machine_id]`, what the caller read.

        One conditional UPDATE per machine decides it, on SQLite and PostgreSQL alike: of two returns racing
        for a machine (any process, any host), one takes it. Returns the machines written.
        """
        taken: list[Machine] = []
        async with self.db.transaction():
            for m in machines:
                written = await self.db.execute(
                    "UPDATE machines SET status = :status, return_request_id = :ret, name = :name, updated_at = :u,"
                    " data = :data WHERE machine_id = :id AND COALESCE(return_request_id, '') = :held"
                    f" AND status NOT IN {_GONE_SQL}",
                    {**self._machine_params(m), "held": held_by.get(m.machine_id) or ""},
                )
                if written:
                    taken.append(m)
        return taken

    async def get_machine(self, machine_id: str) -> Machine | None:
        row = await self.db.fetchone("SELECT data FROM machines WHERE machine_id = :id", {"id": machine_id})
        return models.Machine.model_validate_json(row["data"]) if row else None

    async def get_machines(self, machine_ids: Sequence[str], *, for_update: bool = False) -> dict[str, Machine]:
        if not machine_ids:
            return {}
        clause, params = _in("m", list(machine_ids))
        rows = await self.db.fetchall(
            f"SELECT data FROM machines WHERE machine_id IN {clause}{self._lock(for_update)}", params
        )
        out = (models.Machine.model_validate_json(r["data"]) for r in rows)
        return {m.machine_id: m for m in out}

    async def machines_named(self, names: Sequence[str]) -> list[Machine]:
        """Every stored machine with one of these host names (a name may be reused after its machine went away:
        several machines can answer one name)."""
        found: list[Machine] = []
        for start in range(0, len(names), 500):  # bounded statement size, whatever the caller sends
            clause, params = _in("n", list(names[start : start + 500]))
            rows = await self.db.fetchall(f"SELECT data FROM machines WHERE name IN {clause}", params)
            found += (models.Machine.model_validate_json(row["data"]) for row in rows)
        return found

    async def machines_of_request(self, request_id: str, *, for_update: bool = False) -> list[Machine]:
        return (await self.machines_of_requests([request_id], for_update=for_update))[request_id]

    async def machines_of_return(self, return_request_id: str, *, for_update: bool = False) -> list[Machine]:
        found = await self.machines_of_requests([return_request_id], returns=True, for_update=for_update)
        return found[return_request_id]

    async def machines_of_requests(
        self, request_ids: Sequence[str], *, returns: bool = False, for_update: bool = False
    ) -> dict[str, list[Machine]]:
        """Machines of many requests in one query (of return requests with `returns`), in each one's usual order
        (`for_update`: their rows locked until the transaction ends, see `_lock`). One request's are kept under
        the change stamp (`read_kept`: the REST read asks for the same ones again); several requests' are read
        for this caller alone: a listing or a status poll seldom asks the same set twice between commits, and
        keeping them would cost a status poll of 1,000 requests ≈ 30 M instructions (copies, memory)."""
        out: dict[str, list[Machine]] = {rid: [] for rid in request_ids}
        if not out:
            return out
        column, order = ("return_request_id", "machine_id") if returns else ("request_id", "created_at, machine_id")
        lock = self._lock(for_update)
        clause, params = _in("r", list(out))
        sql = f"SELECT {column} AS owner_id, data FROM machines WHERE {column} IN {clause}" + (
            lock or f" ORDER BY {order}"
        )
        if for_update or len(out) > 1:
            for owner, machine in _owned_machines(await self.db.fetchall(sql, params)):
                out[owner].append(machine)
        else:
            for owner, machine in await self.db.read_kept(sql, params, _owned_machines):
                out[owner].append(detached(machine))
        if lock and not returns:
            for machines in out.values():
                machines.sort(key=lambda m: (m.created_at, m.machine_id))
        return out

    def _lock(self, for_update: bool) -> str:
        """The clause that locks the machine rows read until the transaction ends: PostgreSQL only (SQLite's
        BEGIN IMMEDIATE already serialises writers), always in machine id order, so two transactions locking
        overlapping machines wait for each other and never deadlock."""
        return " ORDER BY machine_id FOR UPDATE" if for_update and self.db.dialect == "postgresql" else ""

    async def list_machines(
        self,
        *,
        statuses: Sequence[str] | None = None,
        template_id: str | None = None,
        request_id: str | None = None,
        provider_name: str | None = None,
        updated_before: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        access: AccessPlan | None = None,
    ) -> tuple[list[Machine], int]:
        """Machines newest first, and the total that matched before limit/offset: only those `access` (the
        caller's query plan) allows, when given."""
        conds: list[str] = []
        params: dict[str, Any] = {}
        if statuses:
            clause, p = _in("s", list(statuses))
            conds.append(f"status IN {clause}")
            params.update(p)
        for col, val in (("template_id", template_id), ("request_id", request_id), ("provider_name", provider_name)):
            if val:
                conds.append(f"{col} = :{col}")
                params[col] = val
        if updated_before is not None:
            conds.append("updated_at < :before")
            params["before"] = _ts(updated_before)
        from .access import plan_where

        allowed, plan_params = plan_where(access, "machine", self.db.dialect)
        if allowed is not None:
            conds.append(f"({allowed})")
            params.update(plan_params)
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        total_row = await self.db.fetchone(f"SELECT COUNT(*) AS n FROM machines{where}", params)
        sql = f"SELECT data FROM machines{where} ORDER BY created_at DESC, machine_id"
        if limit is not None:
            sql += " LIMIT :limit OFFSET :offset"
            params = {**params, "limit": limit, "offset": offset}
        rows = await self.db.fetchall(sql, params)
        return [models.Machine.model_validate_json(r["data"]) for r in rows], int(total_row["n"]) if total_row else 0

    async def count_machines_by_status(self) -> dict[str, int]:
        rows = await self.db.fetchall("SELECT status AS k, COUNT(*) AS n FROM machines GROUP BY status")
        return {r["k"]: int(r["n"]) for r in rows}

    async def count_active_machines(self, template_id: str | None = None) -> dict[str, int]:
        clause, params = _in("s", list(_ACTIVE_MACHINE))
        where = f" WHERE status IN {clause}"
        if template_id:
            where += " AND template_id = :tpl"
            params["tpl"] = template_id
        rows = await self.db.fetchall(
            f"SELECT template_id AS k, COUNT(*) AS n FROM machines{where} GROUP BY template_id", params
        )
        return {r["k"]: int(r["n"]) for r in rows}

    async def requested_since(self, user_id: str, since: datetime) -> list[tuple[datetime, int]]:
        """(created at, machine count) of the provisioning requests `user_id` made since `since`, oldest first
        (dry runs are never recorded)."""
        rows = await self.db.fetchall(
            "SELECT data FROM requests WHERE created_by = :u AND request_type = 'provision' AND created_at >= :s"
            " ORDER BY created_at",
            {"u": user_id, "s": _ts(since)},
        )
        found = [models.Request.model_validate_json(r["data"]) for r in rows]
        return [(r.created_at, r.count) for r in found]

    async def count_active_by_provider(self) -> dict[str, int]:
        """Active machines per provider instance that made them."""
        clause, params = _in("s", list(_ACTIVE_MACHINE))
        rows = await self.db.fetchall(
            f"SELECT provider_name AS k, COUNT(*) AS n FROM machines WHERE status IN {clause} GROUP BY provider_name",
            params,
        )
        return {r["k"]: int(r["n"]) for r in rows}

    async def delete_machines(self, machine_ids: Sequence[str]) -> int:
        if not machine_ids:
            return 0
        clause, params = _in("m", list(machine_ids))
        return await self.db.execute(f"DELETE FROM machines WHERE machine_id IN {clause}", params)

    # -- the server's probes -----------------------------------------------
    async def ping(self) -> None:
        """Raise unless the database answers."""
        await self.db.fetchone("SELECT 1 AS ok")

    async def schema_version(self) -> int:
        """The migration the schema is at (0: none)."""
        row = await self.db.fetchone("SELECT version FROM schema_version WHERE id = 1")
        return int(row["version"]) if row else 0

    async def inventory(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Machines by status and provider, requests by type, status and provider (one statement each)."""
        machines = await self.db.fetchall(
            "SELECT status, provider_name, COUNT(*) AS n FROM machines GROUP BY status, provider_name"
        )
        requests = await self.db.fetchall(
            "SELECT request_type, status, provider_name, COUNT(*) AS n FROM requests"
            " GROUP BY request_type, status, provider_name"
        )
        return [dict(r) for r in machines], [dict(r) for r in requests]

    # -- meta -------------------------------------------------------------
    async def set_meta(self, key: str, value: str) -> None:
        await self.db.execute(
            "INSERT INTO meta (key, value) VALUES (:k, :v) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            {"k": key, "v": value},
        )


async def open_store(target: str, *, claim_seconds: float = 60.0) -> Store:
    """Open (and migrate) the store at a SQLite path or PostgreSQL URL."""
    db = open_database(target)
    await migrate(db)
    store = Store(db, claim_seconds)
    await store.fill_template_active()
    return store
