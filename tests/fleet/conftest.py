"""The fleet fixtures (tests/support/fleet.py): `fleet` is three servers on one PostgreSQL database behind
HAProxy, then one server with two workers on one SQLite file; `fleet_config` is the configuration every
server of it serves (override it in a test module for other settings; the store is the fleet's)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.backends import base_config
from tests.support.fleet import KINDS, Fleet
from tests.support.fleet import fleet as start_fleet


@pytest.fixture
def fleet_config(tmp_path: Path) -> dict[str, Any]:
    return base_config(tmp_path)


@pytest.fixture(params=[pytest.param(k, marks=pytest.mark.postgres) if k == "postgresql" else k for k in KINDS])
async def fleet(request: pytest.FixtureRequest, fleet_config: dict[str, Any], tmp_path: Path) -> AsyncIterator[Fleet]:
    async with start_fleet(request.param, fleet_config, tmp_path) as f:
        yield f
