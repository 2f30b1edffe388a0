"""Wire modes of the SDK's in-process MCP client.

Tests open the client inside the test body (`async with connect(...)`): the client holds a task group,
which must be entered and left in the same task, and an async fixture's teardown runs in another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pluginsdk.config import load_settings
from tests.auth.conftest import Mailbox, mailbox  # noqa: F401 -- the loopback SMTP fixture
from tests.auth.federation.test_external_oauth import idp  # noqa: F401 -- the loopback JWKS fixture
from tests.console.conftest import _prepare
from tests.mcp.http_site import McpSite, config_for
from tests.support.remote import serving


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    """`auto` dispatches directly (2026-07-28); `legacy` runs JSON-RPC in memory with initialize."""
    return str(request.param)


@pytest.fixture
def site(tmp_path: Path, mailbox: Mailbox) -> Iterator[McpSite]:  # noqa: F811 -- the fixture above
    """A real server (uvicorn on loopback) serving /mcp, with the console tests' users (`http_site.py`)."""
    from pluginsdk.server import create_app

    config = config_for(tmp_path, mailbox)
    with ThreadPoolExecutor(1) as pool:
        admin, viewer, secret = pool.submit(asyncio.run, _prepare(config, mailbox)).result()
    app = create_app(load_settings(config=config, environ={}))
    with serving(app) as url:
        yield McpSite(url, app, admin, viewer, "operator", secret)
