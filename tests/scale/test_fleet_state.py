"""Two servers on one store (a SQLite file, then PostgreSQL) share what they hold for callers: a console session
made on one is good on the other and across a restart, and a sign-out, a key deletion or a password reset on one
ends it at the other's next call; an OAuth client registered on one signs in through the other, and its tokens
work anywhere; floods of anonymous creations from one address are refused (429, `Retry-After`, the one
envelope) without ending anyone else's session or client; a user's own oldest session ends past their cap."""

from __future__ import annotations

import re
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pluginsdk import PluginSDK
from tests.auth.conftest import Mailbox, free_port, mailbox, managed_app  # noqa: F401 -- the loopback SMTP fixture
from tests.console.conftest import PASSWORD, _prepare
from tests.mcp.http_site import REDIRECT, McpSite, code_for, exchange, pkce, register
from tests.support.remote import running_server

COOKIE = "pluginsdk_console"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_templates", "arguments": {}}}


def console_sign_in(url: str, **form: str) -> httpx.Response:
    """POST the console's sign-in form (an `api_key`, or `username` and `password`) as a new browser."""
    with httpx.Client(timeout=30) as browser:
        page = browser.get(f"{url}/ui/login")
        token = re.search(r'name="csrf" value="([^"]*)"', page.text)
        assert token is not None, page.text
        return browser.post(f"{url}/ui/login", data={"csrf": token[1], **form}, follow_redirects=False)


def session_of(url: str, **form: str) -> str:
    answer = console_sign_in(url, **form)
    assert answer.status_code == 303, answer.text
    cookie = answer.cookies.get(COOKIE)
    assert cookie
    return cookie


def page(url: str, cookie: str, path: str = "/ui/") -> httpx.Response:
    return httpx.get(f"{url}{path}", cookies={COOKIE: cookie}, follow_redirects=False, timeout=30)


def signed_in(url: str, cookie: str) -> bool:
    answer = page(url, cookie)
    assert answer.status_code in (200, 303), answer.text
    return answer.status_code == 200


def csrf_of(url: str, cookie: str) -> str:
    found = re.search(r'name="csrf" value="([^"]*)"', page(url, cookie).text)
    assert found is not None
    return found[1]


def mcp_call(url: str, token: str) -> httpx.Response:
    headers = {**ACCEPT, "authorization": f"Bearer {token}", "mcp-protocol-version": "2025-11-25"}
    return httpx.post(f"{url}/mcp", json=LIST, headers=headers, timeout=30)


def code_across(
    http: httpx.Client, start: str, finish: str, public: str, client: dict[str, Any], challenge: str
) -> str:
    """A code by an authorization begun on `start`, the sign-in page read from the public address, the form
    posted to `finish` (three requests, wherever a load balancer sends them)."""
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st",
        "resource": f"{public}/mcp",
    }
    begun = http.get(f"{start}/authorize", params=params)
    assert begun.status_code == 302, begun.text
    form_page = http.get(begun.headers["location"])
    csrf = re.search(r'name="csrf" value="([^"]*)"', form_page.text)
    request = re.search(r'name="request" value="([^"]*)"', form_page.text)
    assert csrf and request, form_page.text
    data = {"csrf": csrf[1], "request": request[1], "username": "operator", "password": PASSWORD}
    done = http.post(f"{finish}/oauth/signin", data=data)  # the form's cookie: the jar's, any port of the host
    assert done.status_code == 302, done.text
    return parse_qs(urlsplit(done.headers["location"]).query)["code"][0]


def refresh(url: str, client: dict[str, Any], token: str) -> httpx.Response:
    form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client["client_id"]}
    return httpx.post(f"{url}/token", data={**form, "client_secret": client.get("client_secret") or ""}, timeout=30)


@pytest.fixture
async def fleet_config(any_store: dict[str, Any], mailbox: Mailbox) -> dict[str, Any]:  # noqa: F811 -- the fixture
    config = {**any_store, "app": managed_app(mailbox)}
    return config


async def test_console_sessions_are_shared_kept_and_revoked_everywhere(
    fleet_config: dict[str, Any],
    mailbox: Mailbox,  # noqa: F811 -- the fixture
) -> None:
    admin_key, _, _ = await _prepare(fleet_config, mailbox)
    async with PluginSDK(config=fleet_config) as sdk:
        spare = await sdk.create_api_key(api_key_name="spare", description="to delete", user_id="viewer")
    with ExitStack() as stack:
        a, b = (stack.enter_context(running_server(fleet_config)) for _ in range(2))
        admin = session_of(a, api_key=admin_key)
        assert signed_in(b, admin)  # made on A, accepted by B
        posted = httpx.post(  # B's form with the token A's page carried: one CSRF token per session
            f"{b}/ui/roles",
            data={"csrf": csrf_of(a, admin), "role_name": "fleet-role", "description": "made on B"},
            cookies={COOKIE: admin},
            timeout=30,
        )
        assert posted.status_code == 303, posted.text

        viewer = session_of(a, api_key=str(spare.api_key))
        assert signed_in(b, viewer)
        deleted = httpx.delete(
            f"{b}/auth/api-keys/{spare.api_key_id}", headers={"authorization": f"Bearer {admin_key}"}, timeout=30
        )
        assert deleted.status_code == 200, deleted.text
        assert not signed_in(a, viewer)  # the key's deletion on B ends its session on A at once

        operator = session_of(b, username="operator", password=PASSWORD)
        assert signed_in(a, operator)
        reset = httpx.post(
            f"{a}/user/managed/operator/resetPassword",
            json={"confirmReset": True},
            headers={"authorization": f"Bearer {admin_key}"},
            timeout=30,
        )
        assert reset.status_code == 200, reset.text
        assert not signed_in(b, operator)  # a password reset on A ends the session made on B

        second = session_of(b, api_key=admin_key)
        out = httpx.post(f"{b}/ui/logout", data={"csrf": csrf_of(b, second)}, cookies={COOKIE: second}, timeout=30)
        assert out.status_code == 303
        assert not signed_in(a, second)  # signed out on B: over on A
        assert signed_in(a, admin)  # the administrator's other session is untouched
    with running_server(fleet_config) as restarted:  # every server gone, one new: still signed in
        assert signed_in(restarted, admin)


async def test_oauth_clients_and_tokens_work_across_servers_and_restarts(
    fleet_config: dict[str, Any],
    mailbox: Mailbox,  # noqa: F811 -- the fixture
) -> None:
    port = free_port()
    a = f"http://127.0.0.1:{port}"  # the address clients know (a load balancer's, in a fleet): mcp.public_url
    fleet_config = {**fleet_config, "mcp": {"public_url": a}}
    await _prepare(fleet_config, mailbox)
    with running_server(fleet_config, port) as a, running_server(fleet_config) as b, httpx.Client(timeout=30) as http:
        client = register(http, a, grant_types=["authorization_code", "refresh_token"])
        verifier, challenge = pkce()
        code = code_across(http, b, b, a, client, challenge)  # begun and signed in on B
        issued = exchange(http, a, client, code, verifier)  # exchanged on A
        assert issued.status_code == 200, issued.text
        tokens = issued.json()
        for url in (a, b):
            answer = mcp_call(url, tokens["access_token"])
            assert answer.status_code == 200 and '"isError":false' in answer.text.replace(" ", ""), answer.text
        renewed = refresh(b, client, tokens["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        fresh = renewed.json()
        assert mcp_call(a, fresh["access_token"]).status_code == 200

        replayed = refresh(a, client, tokens["refresh_token"])  # the spent one, again: the family ends
        assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
        assert mcp_call(b, fresh["access_token"]).status_code == 401
        assert refresh(b, client, fresh["refresh_token"]).status_code == 400

        code = code_across(http, a, b, a, client, challenge)
        again = exchange(http, b, client, code, verifier).json()
    with running_server(fleet_config, port) as restarted, httpx.Client(timeout=30) as http:
        assert mcp_call(restarted, again["access_token"]).status_code == 200  # the token outlives the servers
        verifier, challenge = pkce()
        code = code_across(http, restarted, restarted, a, client, challenge)
        assert exchange(http, restarted, client, code, verifier).status_code == 200  # so does the registration


async def test_floods_are_refused_per_address_and_end_no_one_elses_state(
    any_store: dict[str, Any],
    mailbox: Mailbox,  # noqa: F811 -- the fixture
) -> None:
    held = {"creations_per_window": 4, "sessions_per_user": 2, "clients_per_address": 50}
    config = {**any_store, "app": managed_app(mailbox), "api": {"held": held}}
    admin_key, viewer_key, secret = await _prepare(config, mailbox)
    with running_server(config) as url, httpx.Client(timeout=30) as http:
        admin = session_of(url, api_key=admin_key)
        viewers = [session_of(url, api_key=viewer_key) for _ in range(3)]  # the viewer's own cap is 2
        assert [signed_in(url, v) for v in viewers] == [False, True, True]  # their own oldest ended
        flooded = console_sign_in(url, api_key=viewer_key)  # the 5th sign-in from this address in the window
        assert flooded.status_code == 429 and int(flooded.headers["retry-after"]) >= 1
        assert signed_in(url, admin)  # no one else's session ended

        kept = register(http, url)
        for _ in range(3):
            register(http, url)
        refused = http.post(f"{url}/register", json={"redirect_uris": ["https://x.example/cb"]})
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        envelope = refused.json()
        assert envelope["success"] is False and envelope["error_code"] == "TOO_MANY_REQUESTS"
        verifier, challenge = pkce()
        code, _ = code_for(http, McpSite(url, None, "", "", "operator", secret), kept, challenge)
        assert exchange(http, url, kept, code, verifier).status_code == 200  # the first client still signs in


async def test_address_and_user_caps_end_only_the_callers_own(tmp_path: Path, mailbox: Mailbox) -> None:  # noqa: F811
    """Registrations past the address's cap are refused, not evicted; a user's sign-ins past their cap end
    that user's own oldest grant, never another caller's."""
    from tests.support.backends import base_config

    held = {"clients_per_address": 2, "grants_per_user": 1}
    config = base_config(tmp_path, app=managed_app(mailbox), api={"held": held})
    admin_key, _, secret = await _prepare(config, mailbox)
    with running_server(config) as url, httpx.Client(timeout=30) as http:
        site = McpSite(url, None, "", "", "operator", secret)
        first = register(http, url)
        register(http, url)
        refused = http.post(f"{url}/register", json={"redirect_uris": ["https://x.example/cb"]})
        assert refused.status_code == 429 and refused.json()["error_code"] == "TOO_MANY_REQUESTS"
        verifier, challenge = pkce()
        tokens = []
        for _ in range(2):  # the operator signs in twice: their cap is one sign-in
            code, _ = code_for(http, site, first, challenge)
            answer = exchange(http, url, first, code, verifier)
            assert answer.status_code == 200, answer.text  # the first client still signs in
            tokens.append(answer.json()["access_token"])
        assert mcp_call(url, tokens[0]).status_code == 401  # their own older grant ended
        assert mcp_call(url, tokens[1]).status_code == 200
        assert mcp_call(url, admin_key).status_code == 200  # no one else's access is touched
