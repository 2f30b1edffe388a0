"""Two database connections behind one small async interface.

- SQLite (embedded default): the stdlib `sqlite3` module, statements run
  inline on the event loop. A point read costs ~6 µs this way against ~1 ms
  through SQLAlchemy's async engine (threads hand-offs; see docs/design.md),
  and the CLI's cold start does not pay SQLAlchemy's 250 ms import.
  WAL, busy_timeout and foreign keys are on.
- PostgreSQL: SQLAlchemy 2 Core async engine on asyncpg, imported only then.

Both take the same portable SQL text with `:name` parameters.
Rule for callers: inside `transaction()` await nothing but this database (no
provider calls), so an SQLite transaction never interleaves with another task.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

from pluginsdk.errors import ConfigurationError

__all__ = ["Database", "Row", "open_database"]

Row = Mapping[str, Any]
Params = Mapping[str, Any] | None


class Database(Protocol):
    dialect: str
    url: str

    async def fetchone(self, sql: str, params: Params = None) -> Row | None: ...

    async def fetchall(self, sql: str, params: Params = None) -> list[Row]: ...

    async def execute(self, sql: str, params: Params = None) -> int:
        """Run one statement; returns the affected row count."""
        ...

    async def executemany(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None: ...

    def transaction(self) -> Any:
        """`async with db.transaction():` — all statements inside commit or roll back together."""
        ...

    async def aclose(self) -> None: ...


def _dict_factory(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {col[0]: row[i] for i, col in enumerate(cursor.description)}


class SqliteDatabase:
    """sqlite3 used inline; one connection per engine, transactions serialized by a lock."""

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.url = path
        if path != ":memory:":
            try:
                Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigurationError(
                    f"Cannot create the directory of the SQLite store {path!r}: {exc.strerror}.", key="storage.path"
                ) from exc
        try:
            self._conn = sqlite3.connect(
                str(Path(path).expanduser()) if path != ":memory:" else path,
                isolation_level=None,
                check_same_thread=False,
                timeout=10.0,
            )
            self._conn.row_factory = _dict_factory
            for pragma in ("journal_mode=WAL", "busy_timeout=10000", "foreign_keys=ON", "synchronous=NORMAL"):
                self._conn.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as exc:
            raise ConfigurationError(f"Cannot open the SQLite store {path!r}: {exc}.", key="storage.path") from exc
        self._lock = asyncio.Lock()
        self._depth = 0

    async def fetchone(self, sql: str, params: Params = None) -> Row | None:
        row: Row | None = self._conn.execute(sql, params or {}).fetchone()
        return row

    async def fetchall(self, sql: str, params: Params = None) -> list[Row]:
        return self._conn.execute(sql, params or {}).fetchall()

    async def execute(self, sql: str, params: Params = None) -> int:
        return self._conn.execute(sql, params or {}).rowcount

    async def executemany(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._conn.executemany(sql, rows)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteDatabase]:
        if self._depth:  # nested: join the outer transaction
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        async with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._depth = 0

    async def aclose(self) -> None:
        self._conn.close()


class PostgresDatabase:
    """SQLAlchemy async engine on asyncpg; a transaction pins one pooled connection to the task."""

    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        try:
            from sqlalchemy import text
            from sqlalchemy.ext.asyncio import create_async_engine
        except ImportError as exc:  # pragma: no cover - depends on extras
            raise ConfigurationError(
                "PostgreSQL storage needs the 'postgres' extra: pip install 'pluginsdk[postgres]'.", key="storage.url"
            ) from exc
        self.url = url
        if url.startswith("postgresql://") or url.startswith("postgres://"):
            url = "postgresql+asyncpg://" + url.split("://", 1)[1]
        self._text = text
        self._engine = create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=False)
        self._tx: dict[asyncio.Task[Any] | None, Any] = {}

    def _current(self) -> Any:
        return self._tx.get(asyncio.current_task())

    async def _run(self, sql: str, params: Params) -> Any:
        conn = self._current()
        if conn is not None:
            return await conn.execute(self._text(sql), dict(params or {}))
        async with self._engine.begin() as c:
            return await c.execute(self._text(sql), dict(params or {}))

    async def fetchone(self, sql: str, params: Params = None) -> Row | None:
        res = await self._run(sql, params)
        row = res.mappings().first()
        return dict(row) if row is not None else None

    async def fetchall(self, sql: str, params: Params = None) -> list[Row]:
        res = await self._run(sql, params)
        return [dict(r) for r in res.mappings().all()]

    async def execute(self, sql: str, params: Params = None) -> int:
        res = await self._run(sql, params)
        return int(res.rowcount or 0)

    async def executemany(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        conn = self._current()
        if conn is not None:
            await conn.execute(self._text(sql), [dict(r) for r in rows])
            return
        async with self._engine.begin() as c:
            await c.execute(self._text(sql), [dict(r) for r in rows])

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresDatabase]:
        task = asyncio.current_task()
        if task in self._tx:
            yield self
            return
        async with self._engine.begin() as conn:
            self._tx[task] = conn
            try:
                yield self
            finally:
                self._tx.pop(task, None)

    async def aclose(self) -> None:
        await self._engine.dispose()


def open_database(target: str) -> Database:
    """A SQLite path (or ':memory:'), or a postgresql:// URL."""
    if target.startswith(("postgresql", "postgres:")):
        return PostgresDatabase(target)
    if target.startswith("sqlite:"):
        target = target.split(":///", 1)[1] if ":///" in target else ":memory:"
    return SqliteDatabase(target)
