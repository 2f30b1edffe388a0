"""Browser tests of the console: Debian's Chromium driven by Playwright's Python package, a real server.

The browser is the one the project's CI installs (`.ci/run`: Debian `chromium`); Playwright's own browser
download is never used. Where either is missing the tests skip, saying why — and fail under
`PLUGINSDK_REQUIRE_CLIENTS` (CI), like the other independent clients (`tests/support/npm.py`).
Screenshots go to `$PLUGINSDK_CONSOLE_SHOTS`, else a temporary directory (never the repository).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyotp
import pytest

from pluginsdk import PluginSDK
from tests.auth.conftest import Mailbox, authenticate, call_as, mailbox, managed_app  # noqa: F401 -- the loopback SMTP fixture
from tests.support.backends import base_config
from tests.support.npm import unavailable
from tests.support.remote import running_server

CHROMIUM = Path("/usr/bin/chromium")
PASSWORD = "Console-Test-Passw0rd!"
SHOTS = Path(os.environ.get("PLUGINSDK_CONSOLE_SHOTS") or Path(tempfile.gettempdir()) / "pluginsdk-console-shots")


@dataclass
class Site:
    url: str
    config: dict[str, Any]
    admin_key: str
    viewer_key: str
    """An API key of `viewer`, whose role may read (GET) everything and change nothing."""
    operator: str
    """A managed-pool user holding the admin role, signing in with PASSWORD."""
    totp_secret: str
    """The authenticator secret of `guarded`, an administrator whose sign-in needs a TOTP code."""


async def _clone_for_viewer(sdk: PluginSDK) -> None:
    """The `viewer` role: every default admin constraint, GET only."""
    await sdk.create_role(role_name="viewer", description="reads everything, changes nothing")
    listing = await sdk.list_constraints(page_size=100)
    for c in listing.message.items:
        if not c.constraint_id.startswith("psdk-default-admin-"):
            continue
        await sdk.create_constraint(
            c.constraint_id.replace("admin", "viewer"),
            name=f"viewer: {c.object_type}",
            description=f"viewer reads every {c.object_type}",
            object_type=c.object_type,
            criteria_and=[r.model_dump(mode="json") for r in c.criteria_and],
            criteria_or=[r.model_dump(mode="json") for r in c.criteria_or],
            group_permissions=[{"groupId": "viewer", "permission": "GET", "permissionType": "allow"}],
        )


async def _prepare(config: dict[str, Any], box: Mailbox) -> tuple[str, str, str]:
    async with PluginSDK(config=config) as sdk:
        admin = await sdk.create_api_key(
            api_key_name="console-admin", description="console test admin", user_id="administrator"
        )
        await _clone_for_viewer(sdk)
        await sdk.create_template(template_id="base", image_id="img-base", name="Base template")
        await sdk.create_user_roles(user_id="viewer", role_name=["viewer"])
        viewer = await sdk.create_api_key(
            api_key_name="console-viewer", description="console test viewer", user_id="viewer"
        )
        await sdk.create_managed_user(user_id="operator", email="operator@example.com")
        await sdk.create_user_roles(user_id="operator", role_name=["admin"])
        await sdk.login("operator", box.temporary_password(), new_password=PASSWORD)
        await sdk.create_managed_user(user_id="guarded", email="guarded@example.com")
        await sdk.create_user_roles(user_id="guarded", role_name=["admin"])
        tokens = await sdk.login("guarded", box.temporary_password(), new_password=PASSWORD)
        me = await authenticate(sdk, f"Bearer {tokens.id_token}")
        setup = await call_as(sdk, me, "setup_mfa")
        totp = pyotp.TOTP(setup.secret_code)
        await call_as(sdk, me, "verify_mfa", code=str(totp.at(time.time() - 30)))
        return str(admin.api_key), str(viewer.api_key), setup.secret_code


@pytest.fixture
def site(tmp_path: Path, mailbox: Mailbox) -> Iterator[Site]:  # noqa: F811 -- the fixture above
    config = base_config(tmp_path, app=managed_app(mailbox))
    # in a thread of its own: Playwright's sync API keeps an event loop running in this one
    with ThreadPoolExecutor(1) as pool:
        admin, viewer, secret = pool.submit(asyncio.run, _prepare(config, mailbox)).result()
    with running_server(config) as url:
        yield Site(url, config, admin, viewer, "operator", secret)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per test module: Playwright's sync API keeps an event loop running in this thread while
    it is open, which later asyncio tests must not find."""
    if not CHROMIUM.exists():
        unavailable(f"{CHROMIUM} is missing: install Debian's chromium (`.ci/run` does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Playwright's Python package is not installed (the dev extra pins it)")
    with sync_playwright() as p:
        try:
            chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        except Exception as exc:
            unavailable(f"{CHROMIUM} does not start under Playwright: {str(exc)[:300]}")
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10000)
    try:
        yield tab
    finally:
        context.close()


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def confirm(page: Any, button: str, shot_name: str = "") -> None:
    """Answer a destructive action's confirmation page: it names the consequence; `button` does it."""
    page.locator("p.warning[role=alert]").wait_for()
    assert page.get_by_role("link", name="Go back, change nothing").count() == 1
    if shot_name:
        shot(page, shot_name)
    page.get_by_role("button", name=button, exact=True).click()


def sign_in_with_key(page: Any, url: str, key: str) -> None:
    page.goto(f"{url}/ui/")
    page.fill("#api_key", key)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/ui/")
