"""Two database connections behind one small async interface.

- SQLite (embedded default): the stdlib `sqlite3` module, statements run
  inline on the event loop. A point read costs ~6 µs this way against ~1 ms
  through SQLAlchemy's async engine (threads hand-offs; see docs/design.md),
  and the CLI's cold start does not pay SQLAlchemy's 250 ms import.
  WAL, busy_timeout and foreign keys are on.
- PostgreSQL: asyncpg, imported only then, on reused connections
  (`_Connections`). An autocommit statement is one round trip; through
  SQLAlchemy's async engine it was three (BEGIN, statement, COMMIT) and
  ~0.5 ms of CPU (issue 16 bench, docs/benchmarks.md).

Both take the same portable SQL text with `:name` parameters.
Rule for callers: inside `transaction()` await nothing but this database (no
provider calls), so an SQLite transaction never interleaves with another task.

SQLite and other processes: the connection's own busy_timeout is 0, so a
write that finds another process holding the file's write lock fails at once
instead of sleeping in C on the event loop; it is retried here with
`asyncio.sleep` backoff for up to `_SQLITE_BUSY_SECONDS` (other requests are
served meanwhile). Only statements that cannot have done anything are retried
(BEGIN IMMEDIATE, or an autocommit statement, which SQLite rolls back whole).
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pluginsdk import observe
from pluginsdk.errors import ConfigurationError

from .conflicts import StoreFailure, already_exists
from .files import open_private

__all__ = ["Database", "Row", "open_database"]

Row = Mapping[str, Any]
Params = Mapping[str, Any] | None
T = TypeVar("T")


class Database(Protocol):
    dialect: str
    url: str

    async def fetchone(self, sql: str, params: Params = None) -> Row | None: ...

    async def fetchall(self, sql: str, params: Params = None) -> list[Row]: ...

    async def read_kept(self, sql: str, params: Mapping[str, str | int], parse: Callable[[list[Row]], T]) -> T:
        """`parse` of a plain read's rows (rows of tables, nothing of the clock or chance), kept while the
        store's change stamp is the one it was read under (`change_stamp`), else read and parsed again. What
        is kept is handed to every caller while the stamp holds: callers copy before they change it."""
        ...

    async def execute(self, sql: str, params: Params = None) -> int:
        """Run one statement; returns the affected row count."""
        ...

    async def executemany(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None: ...

    def transaction(self) -> Any:
        """`async with db.transaction():` — all statements inside commit or roll back together."""
        ...

    def change_stamp(self) -> bytes | None:
        """Bytes that change with every commit to the store by any connection, read without a statement; None
        where the store offers none (then the caller reads what it needs)."""
        ...

    async def aclose(self) -> None: ...


def _sqlite_error(exc: sqlite3.Error, sql: str, rows: Sequence[Mapping[str, Any]]) -> Exception:
    """A unique-key violation as 409; any other sqlite3 error as it is (its text holds no values)."""
    if isinstance(exc, sqlite3.IntegrityError) and str(exc).startswith("UNIQUE constraint failed: "):
        qualified = [c.strip() for c in str(exc).split(": ", 1)[1].split(",")]
        table = qualified[0].split(".", 1)[0] if qualified else None
        return already_exists(table, [c.split(".", 1)[-1] for c in qualified], sql, rows)
    return exc


_WAL_HEADER = 96
"""The WAL index's header, both copies (https://www.sqlite.org/walformat.html, "The WAL-Index Header")."""

_KEPT_READS = 1024
"""Reads kept at most under one change stamp (`SqliteDatabase.read_kept`); all dropped at the next commit."""
_NOT_KEPT: Any = object()

_SQLITE_BUSY_SECONDS = 10.0
"""How long a write waits for another process's lock on the SQLite file before it fails."""


def _is_busy(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(("database is locked", "database is busy"))


@lru_cache(maxsize=1024)
def _verb(sql: str) -> str:
    """The statement's first keyword (SELECT, INSERT, ...): a low-cardinality metric label."""
    return sql.lstrip()[:6].upper()


def _dict_factory(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {col[0]: row[i] for i, col in enumerate(cursor.description)}


class SqliteDatabase:
    """sqlite3 used inline; one connection per engine, transactions serialized by a lock."""

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.url = path
        if path != ":memory:":
            try:
                open_private(Path(path).expanduser())
            except OSError as exc:
                raise ConfigurationError(
                    f"Cannot create the SQLite store {path!r} or its directory: {exc.strerror}.", key="storage.path"
                ) from exc
        try:
            self._conn = sqlite3.connect(
                str(Path(path).expanduser()) if path != ":memory:" else path,
                isolation_level=None,
                check_same_thread=False,
                timeout=0.0,
            )
            self._conn.row_factory = _dict_factory
            # switching to WAL takes a moment's exclusive lock: wait for it here, once, while the process starts
            for pragma in ("busy_timeout=10000", "journal_mode=WAL", "busy_timeout=0", "foreign_keys=ON"):
                self._conn.execute(f"PRAGMA {pragma}")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            wal = self._conn.execute("PRAGMA journal_mode").fetchone()["journal_mode"] == "wal"
        except sqlite3.Error as exc:
            raise ConfigurationError(f"Cannot open the SQLite store {path!r}: {exc}.", key="storage.path") from exc
        self._wal_index = f"{Path(path).expanduser().resolve()}-shm" if wal and path != ":memory:" else None
        """The WAL index's path, fixed while the connection opens (a later change of directory moves nothing)."""
        self._shm: int | None = None
        """A descriptor on the WAL index, opened once SQLite has made it (`change_stamp`)."""
        self._kept: tuple[bytes, dict[tuple[Any, ...], Any]] = (b"", {})
        """`read_kept`'s values: (the stamp they were read under, (statement, parameters, parse) -> value)."""
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        """The task whose transaction is open on the connection (nesting is per task, not per connection)."""
        self.busy_waits = 0
        """How many times a write waited for another process's lock (observability, tests)."""

    async def _mine(self) -> None:
        """Wait while another task's transaction is open: its statements must not join it."""
        if self._owner is not None and self._owner is not asyncio.current_task():
            async with self._lock:
                pass

    async def _retry_busy(self, run: Any, *, failed: bool = False) -> Any:
        """`run()` — retried without blocking the loop while another process holds the write lock
        (`failed`: the caller's first attempt found it busy already)."""
        deadline = time.monotonic() + _SQLITE_BUSY_SECONDS
        delay = 0.001
        while True:
            if failed:
                self.busy_waits += 1
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
            try:
                return run()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
            failed = True

    async def _statement(self, run: Any, sql: str) -> Any:
        """`run()` once (the hot path: no retry machinery unless the file is busy), timed for /metrics."""
        if self._owner is not None and self._owner is not asyncio.current_task():
            await self._mine()
        hook = observe.statement
        started = time.perf_counter() if hook is not None else 0.0
        try:
            try:
                return run()
            except sqlite3.OperationalError as exc:
                if self._owner is not None or not _is_busy(exc):
                    raise
            return await self._retry_busy(run, failed=True)  # autocommit: a busy statement did nothing
        finally:
            if hook is not None:
                hook("sqlite", _verb(sql), time.perf_counter() - started)

    async def fetchone(self, sql: str, params: Params = None) -> Row | None:
        try:
            row: Row | None = await self._statement(lambda: self._conn.execute(sql, params or {}).fetchone(), sql)
        except sqlite3.IntegrityError as exc:  # INSERT ... RETURNING
            raise _sqlite_error(exc, sql, [params or {}]) from None
        return row

    async def fetchall(self, sql: str, params: Params = None) -> list[Row]:
        rows: list[Row] = await self._statement(lambda: self._conn.execute(sql, params or {}).fetchall(), sql)
        return rows

    async def read_kept(self, sql: str, params: Mapping[str, str | int], parse: Callable[[list[Row]], T]) -> T:
        """`parse(rows)`, kept under the change stamp the rows were read under: while no connection on the
        host has committed since, a statement would read the same rows. Inside a transaction (no stamp) the
        rows are read and parsed for this caller alone."""
        stamp = self.change_stamp()
        if stamp is None:
            return parse(await self.fetchall(sql, params))
        key = (sql, parse, *params.items())
        kept = self._kept
        if kept[0] == stamp:
            value = kept[1].get(key, _NOT_KEPT)
            if value is not _NOT_KEPT:
                found: T = value
                return found
        else:
            self._kept = kept = (stamp, {})
        value = parse(await self.fetchall(sql, params))
        if len(kept[1]) >= _KEPT_READS:
            kept[1].clear()
        kept[1][key] = value
        return value

    async def execute(self, sql: str, params: Params = None) -> int:
        try:
            count: int = await self._statement(lambda: self._conn.execute(sql, params or {}).rowcount, sql)
        except sqlite3.IntegrityError as exc:
            raise _sqlite_error(exc, sql, [params or {}]) from None
        return count

    async def executemany(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        await self._mine()
        if self._owner is not None or len(rows) <= 1:
            try:
                await self._statement(lambda: self._conn.executemany(sql, rows), sql)
            except sqlite3.IntegrityError as exc:
                raise _sqlite_error(exc, sql, rows) from None
            return
        async with self.transaction():  # autocommit would commit row by row: all or none instead
            try:
                self._conn.executemany(sql, rows)
            except sqlite3.IntegrityError as exc:
                raise _sqlite_error(exc, sql, rows) from None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteDatabase]:
        task = asyncio.current_task()
        if self._owner is not None and self._owner is task:  # nested in this task: join the outer transaction
            yield self
            return
        async with self._lock:
            await self._retry_busy(lambda: self._conn.execute("BEGIN IMMEDIATE"))
            self._owner = task
            try:
                yield self
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                await self._retry_busy(lambda: self._conn.execute("COMMIT"))
            finally:
                self._owner = None

    def change_stamp(self) -> bytes | None:
        """The WAL index's header: SQLite rewrites it at every commit by any connection on this host (the
        counter `iChange`, the last frame, the salts), and only at a commit — the check SQLite itself makes
        before trusting its page cache. Reading it is one `pread` of the shared-memory file, no statement.
        None inside a transaction (this connection sees its own uncommitted writes) or without a WAL index."""
        if self._conn.in_transaction:
            return None
        if self._shm is None:
            if self._wal_index is None:
                return None
            self._shm = _open_wal_index(self._wal_index)
            if self._shm is None:
                return None
        try:
            header = os.pread(self._shm, _WAL_HEADER, 0)
        except OSError:
            return None
        return header if len(header) == _WAL_HEADER else None

    async def aclose(self) -> None:
        self._conn.close()
        if self._shm is not None:
            os.close(self._shm)
            self._shm = None


def _open_wal_index(path: str) -> int | None:
    """A read-only descriptor on the store's WAL index (`path`, the `-shm` file), which SQLite keeps, same inode,
    while any connection is open (this engine's is; a WAL store leaves WAL mode only with no other connection)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


_PG_KEY_COLUMNS = re.compile(r"^Key \(([^)]*)\)=")
_PG_PARAM = re.compile(r"'[^']*'|(?<![:\w]):([A-Za-z_]\w*)")
"""A `:name` parameter outside a string literal (`::type` casts and literals stay as they are)."""


@lru_cache(maxsize=1024)
def _positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """`:name` SQL as asyncpg's `$n` SQL and the names in `$n` order (cached: the hot path parses nothing)."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return m.group(0)
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    return _PG_PARAM.sub(number, sql), tuple(names)


def _postgres_error(exc: Exception, sql: str, rows: Sequence[Mapping[str, Any]]) -> Exception:
    """A unique-key violation (SQLSTATE 23505) as 409; any other driver or connection error as a
    `StoreFailure` naming the statement and SQLSTATE only (asyncpg's text may quote values)."""
    import asyncpg  # type: ignore[import-untyped]

    if not isinstance(exc, asyncpg.PostgresError | asyncpg.InterfaceError | OSError | TimeoutError):
        return exc
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate == "23505":
        m = _PG_KEY_COLUMNS.match(str(getattr(exc, "detail", "") or ""))
        columns = [c.strip().strip('"') for c in m.group(1).split(",")] if m else []
        return already_exists(getattr(exc, "table_name", None), columns, sql, rows)
    return StoreFailure(
        f"PostgreSQL {type(exc).__name__} (SQLSTATE {sqlstate or '?'}) in: {' '.join(sql.split())[:300]}"
    )


_SLOT_WAIT = 30.0


class _Connections:
    """Idle asyncpg connections for reuse, at most `size` open at once.

    Not asyncpg's `Pool`: its release runs through `asyncio.shield` (a task per release) and a reset hook,
    ~60 µs of CPU per statement here (half the statement's client cost). A connection goes back to the idle
    list only when it is known clean: not in a transaction, and no cancellation or driver/link failure on the
    way out (either may leave a query in flight). Anything else terminates it, which also ends its transaction
    on the server (row locks and `pg_advisory_xact_lock` are released there).
    """

    def __init__(self, dsn: str, size: int) -> None:
        import asyncpg

        self._asyncpg = asyncpg
        self._dsn = dsn
        self._idle: list[Any] = []
        self._slots = asyncio.Semaphore(size)
        self._closed = False
        self._broken = (asyncpg.InterfaceError, OSError, TimeoutError)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        await self._slot()
        try:
            conn = self._idle.pop() if self._idle else None
            while conn is not None and conn.is_closed():
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = await self._connect()
            try:
                yield conn
            except BaseException as exc:  # cancelled, or a driver or link failure: the connection may be mid-query
                self._put(conn, clean=isinstance(exc, Exception) and not isinstance(exc, self._broken))
                raise
            self._put(conn, clean=True)
        finally:
            self._slots.release()

    async def _slot(self) -> None:
        """A free slot at once; else wait, but not forever (all `size` connections held for 30 s is a fault)."""
        if not self._slots.locked():
            await self._slots.acquire()
            return
        try:
            async with asyncio.timeout(_SLOT_WAIT):
                await self._slots.acquire()
        except TimeoutError:
            raise StoreFailure(f"PostgreSQL: no connection free within {_SLOT_WAIT:g} s") from None

    async def _connect(self) -> Any:
        try:
            return await self._asyncpg.connect(self._dsn, timeout=30)
        except (*self._broken, self._asyncpg.PostgresError) as exc:
            raise _postgres_error(exc, "(connecting)", []) from None

    def _put(self, conn: Any, *, clean: bool) -> None:
        """Back to the idle list if nothing is left open on it; else closed."""
        if clean and not self._closed and not conn.is_closed() and not conn.is_in_transaction():
            self._idle.append(conn)
        else:
            conn.terminate()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            try:
                await asyncio.wait_for(conn.close(), 5)
            except (*self._broken, self._asyncpg.PostgresError):
                conn.terminate()


class PostgresDatabase:
    """asyncpg connections used directly: an autocommit statement is one round trip (no BEGIN/COMMIT around
    it, no per-statement SQLAlchemy layer); a transaction pins one connection to the task."""

    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        try:
            import asyncpg  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on extras
            raise ConfigurationError(
                "PostgreSQL storage needs the 'postgres' extra: pip install 'pluginsdk[postgres]'.", key="storage.url"
            ) from exc
        self.url = url
        self._pool = _Connections("postgresql://" + url.split("://", 1)[1], size=20)  # postgres://, +asyncpg
        self._tx: dict[asyncio.Task[Any] | None, Any] = {}

    async def _run(self, method: str, sql: str, params: Params) -> Any:
        """`method` (fetch, fetchrow, execute) on the task's transaction connection, or on an idle one."""
        hook = observe.statement
        started = time.perf_counter() if hook is not None else 0.0
        query, names = _positional(sql)
        args = [params[n] for n in names] if names and params is not None else []
        try:
            conn = self._tx.get(asyncio.current_task())
            if conn is not None:
                return await getattr(conn, method)(query, *args)
            async with self._pool.connection() as conn:
                return await getattr(conn, method)(query, *args)
        except Exception as exc:
            raise _postgres_error(exc, sql, [params or {}]) from None
        finally:
            if hook is not None:
                hook("postgresql", _verb(sql), time.perf_counter() - started)

    async def fetchone(self, sql: str, params: Params = None) -> Row | None:
        row = await self._run("fetchrow", sql, params)
        return dict(row) if row is not None else None

    async def fetchall(self, sql: str, params: Params = None) -> list[Row]:
        return [dict(r) for r in await self._run("fetch", sql, params)]

    async def read_kept(self, sql: str, params: Mapping[str, str | int], parse: Callable[[list[Row]], T]) -> T:
        """`parse(rows)`: no change stamp here, so every read is a statement."""
        return parse(await self.fetchall(sql, params))

    async def execute(self, sql: str, params: Params = None) -> int:
        status: str = await self._run("execute", sql, params)  # "UPDATE 3", "INSERT 0 1", "SELECT 1"
        count = status.rsplit(" ", 1)[-1]
        return int(count) if count.isdigit() else 0

    async def executemany(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        query, names = _positional(sql)
        async with self.transaction():  # all rows or none
            try:
                await self._tx[asyncio.current_task()].executemany(query, [[r[n] for n in names] for r in rows])
            except Exception as exc:
                raise _postgres_error(exc, sql, rows) from None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresDatabase]:
        task = asyncio.current_task()
        if task in self._tx:
            yield self
            return
        from asyncpg import PostgresError

        try:
            async with self._pool.connection() as conn, conn.transaction():
                self._tx[task] = conn
                try:
                    yield self
                finally:
                    self._tx.pop(task, None)
        except PostgresError as exc:  # raised by COMMIT (deferred checks); statements map their own
            raise _postgres_error(exc, "COMMIT", []) from None

    def change_stamp(self) -> None:
        """None: a commit elsewhere is told by notification (`auth/policy_watch.py`), not by a stamp."""
        return None

    async def aclose(self) -> None:
        await self._pool.aclose()


def open_database(target: str) -> Database:
    """A SQLite path (or ':memory:'), or a postgresql:// URL."""
    if target.startswith(("postgresql", "postgres:")):
        return PostgresDatabase(target)
    if target.startswith("sqlite:"):
        target = target.split(":///", 1)[1] if ":///" in target else ":memory:"
    return SqliteDatabase(target)
