"""A fresh PostgreSQL database per test (127.0.0.1:5432, trust auth); the test is skipped where none is reachable."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


@asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    """The URL of a new, empty database, dropped afterwards."""
    asyncpg = pytest.importorskip("asyncpg")
    try:
        admin = await asyncio.wait_for(asyncpg.connect(ADMIN_URL), 3)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL not reachable on 127.0.0.1:5432: {exc}")
    name = f"psdk_{uuid.uuid4().hex[:10]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
