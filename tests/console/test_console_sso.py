"""Console sign-in through the organisation's identity provider, in headless Chromium: a real OpenID provider
on loopback (oidc-provider, its own login and consent pages), the console's callback, roles from groups,
sign-out at the provider too; a tampered `state` is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import shot
from tests.support.backends import base_config
from tests.support.npm import npm_clients
from tests.support.oidc import Provider, oidc_app, openid_provider
from tests.support.remote import running_server

ACCOUNTS = {
    "pat": {"email": "pat@example.com", "email_verified": True, "groups": ["platform"]},
    "alice": {"email": "alice@example.com", "email_verified": True, "groups": ["engineers"]},
}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with openid_provider(tmp_path_factory.mktemp("op"), ACCOUNTS) as op:
        yield op


@pytest.fixture
def server(provider: Provider, tmp_path: Path) -> Iterator[str]:
    with running_server(base_config(tmp_path, app=oidc_app(provider))) as url:
        yield url


def _at_provider(page: Any, provider: Provider, login: str) -> None:
    """The provider's own pages: its login form (any password), then its consent page."""
    page.wait_for_url(f"{provider.issuer}/interaction/**")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{provider.issuer}/interaction/**")
    page.click("button[type=submit]")  # consent


def test_sign_in_with_the_provider_roles_from_groups_and_sign_out_there_too(
    server: str, provider: Provider, page: Any
) -> None:
    page.goto(f"{server}/ui/templates")
    assert page.url.startswith(f"{server}/ui/login")
    link = page.get_by_role("link", name="Sign in with Test IdP")
    shot(page, "sso-sign-in")
    link.click()
    _at_provider(page, provider, "pat")
    page.wait_for_url(f"{server}/ui/templates")
    assert page.locator("form.signout span").text_content() == "pat"
    assert page.get_by_role("link", name="Constraints").count() == 1  # platform -> admin: the whole navigation
    shot(page, "sso-signed-in")
    page.click("form.signout button")
    page.wait_for_url(f"{provider.issuer}/session/end**")  # the provider asks before it ends its session
    page.click("button[name=logout]")
    page.wait_for_url(f"{server}/ui/login**")
    page.goto(f"{server}/ui/")
    assert page.url.startswith(f"{server}/ui/login")


def test_a_read_only_group_gets_a_read_only_console(server: str, provider: Provider, page: Any) -> None:
    page.goto(f"{server}/ui/login")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    _at_provider(page, provider, "alice")
    page.wait_for_url(f"{server}/ui/")
    assert page.locator("form.signout span").text_content() == "alice"
    assert page.get_by_role("link", name="Constraints").count() == 0  # engineers -> basicReadOnly


def test_a_tampered_state_is_refused(server: str, provider: Provider, page: Any) -> None:
    page.goto(f"{server}/ui/login")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.wait_for_url(f"{provider.issuer}/interaction/**")  # a sign-in begun: this browser holds its state
    page.goto(f"{server}/ui/sso/oidc/callback?code=a-code&state=not-the-state-this-browser-holds")
    assert "could not be matched" in (page.locator("[role=alert]").text_content() or "")
    page.goto(f"{server}/ui/")
    assert page.url.startswith(f"{server}/ui/login")


def test_the_sign_in_page_with_the_provider_button_passes_axe(server: str, browser: Any) -> None:
    axe = (npm_clients() / "node_modules" / "axe-core" / "axe.min.js").read_text()
    context = browser.new_context(bypass_csp=True)  # axe is injected by the test; the CSP forbids inline script
    page = context.new_page()
    try:
        page.goto(f"{server}/ui/login")
        page.keyboard.press("Tab")  # the skip link, then the provider's button
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Sign in with Test IdP"
        page.evaluate(axe)
        result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
        bad = [v["id"] for v in result["violations"] if v["impact"] in ("serious", "critical")]
        assert bad == []
    finally:
        context.close()
