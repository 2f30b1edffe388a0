"""The console in a real browser through the fleet: Debian's Chromium (Playwright's async API, on the
package's event loop) signs in through HAProxy, clicks through every page of the main navigation, which
every server answers (HAProxy's own per-server counts say which), and stays signed in while every server
restarts in turn: the session is a row of the store, not a process's memory. Screenshots go where
tests/console's do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.console.conftest import CHROMIUM, PASSWORD, SHOTS
from tests.fleet.conftest import OPERATOR
from tests.support.fleet import Fleet
from tests.support.npm import unavailable

pytestmark = pytest.mark.asyncio(loop_scope="package")

PAGES = ("/ui/templates", "/ui/requests", "/ui/machines", "/ui/constraints", "/ui/keys", "/ui/audit", "/ui/ops")


@pytest_asyncio.fixture(loop_scope="package")
async def page() -> AsyncIterator[Any]:
    if not CHROMIUM.exists():
        unavailable(f"{CHROMIUM} is missing: install Debian's chromium (`.ci/run` does)")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        unavailable("Playwright's Python package is not installed (the dev extra pins it)")
    async with async_playwright() as p:
        try:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        except Exception as exc:
            unavailable(f"{CHROMIUM} does not start under Playwright: {str(exc)[:300]}")
        try:
            context = await browser.new_context(viewport={"width": 1200, "height": 900})
            tab = await context.new_page()
            tab.set_default_timeout(15000)
            yield tab
        finally:
            await browser.close()


async def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


async def _signed_in_as_operator(page: Any, url: str) -> None:
    """Each page a signed-in page: the operator's name in the sign-out form, not the sign-in form."""
    assert page.url.startswith(f"{url}/ui/") and "/ui/login" not in page.url, page.url
    assert await page.locator("form.signout span").text_content() == OPERATOR


async def test_chromium_signs_in_through_haproxy_every_server_serves_it_and_a_rolling_restart_keeps_it(
    fleet: Fleet, page: Any
) -> None:
    url = fleet.url
    await page.goto(f"{url}/ui/")
    assert "/ui/login" in page.url
    await page.fill("#username", OPERATOR)
    await page.fill("#password", PASSWORD)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{url}/ui/")
    await _signed_in_as_operator(page, url)
    await _shot(page, f"fleet-{fleet.kind}-dashboard")
    before = await fleet.answered()
    links = await page.eval_on_selector_all("nav[aria-label=Main] a", "links => links.map(a => a.getAttribute('href'))")
    assert set(PAGES) <= set(links), links
    for href in links:  # a click on each link of the main navigation
        await page.click(f"nav[aria-label=Main] a[href='{href}']")
        await page.wait_for_url(f"{url}{href}")
        await _signed_in_as_operator(page, url)
        assert await page.locator("h1").count() == 1, href
    for path in PAGES:
        response = await page.goto(f"{url}{path}")
        assert response is not None and response.status == 200, path
        await _signed_in_as_operator(page, url)
    after = await fleet.answered()
    if len(fleet.servers) > 1:  # every server answered some of the signed-in pages
        assert all(after[s] > before[s] for s in after), (before, after)
        assert len(after) == len(fleet.servers), after
    during = 0
    # behind HAProxy, pages keep coming, signed in, while each server goes and comes back (one server's
    # restart is downtime: the session is kept, the pages wait for it)
    async with fleet.rolling() as restarting:
        while len(fleet.servers) > 1 and not restarting.done():
            response = await page.goto(f"{url}{PAGES[during % len(PAGES)]}")
            assert response is not None and response.status == 200, during
            await _signed_in_as_operator(page, url)
            during += 1
    assert during > 3 or len(fleet.servers) == 1, during
    for path in PAGES[:4]:
        response = await page.goto(f"{url}{path}")
        assert response is not None and response.status == 200, path
        await _signed_in_as_operator(page, url)
    await page.click("a[href='/ui/templates']")
    await page.wait_for_url(f"{url}/ui/templates")
    await _signed_in_as_operator(page, url)
    await _shot(page, f"fleet-{fleet.kind}-after-restart")
