"""Wire modes of the SDK's in-process MCP client.

Tests open the client inside the test body (`async with connect(...)`): the client holds a task group,
which must be entered and left in the same task, and an async fixture's teardown runs in another.
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    """`auto` dispatches directly (2026-07-28); `legacy` runs JSON-RPC in memory with initialize."""
    return str(request.param)
