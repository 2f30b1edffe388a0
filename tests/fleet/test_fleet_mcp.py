"""The official MCP Python SDK client through the fleet, with its own OAuth provider (`OAuthClientProvider`,
tokens and client kept in memory as an assistant keeps them): discovery from the 401, dynamic registration
once, the authorization code with PKCE — the user's browser played by HTTP on the server's sign-in page — the
token, then tool calls that every server answers, calls that go on in one session while every server restarts
in turn, and the same client and token afterwards, without registering or signing in again."""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.console.conftest import PASSWORD
from tests.fleet.conftest import OPERATOR
from tests.support.fleet import Fleet

pytestmark = pytest.mark.asyncio(loop_scope="package")

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """An in-memory `TokenStorage` that counts what the provider stored."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None
        self.registrations = 0
        self.token_sets = 0

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens, self.token_sets = tokens, self.token_sets + 1

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client, self.registrations = client_info, self.registrations + 1


class Browser:
    """The user's browser by HTTP: opens the authorization URL, signs in on the server's page, keeps the code."""

    def __init__(self) -> None:
        self.sign_ins = 0
        self.answer: dict[str, list[str]] = {}

    async def open(self, authorization_url: str) -> None:
        self.sign_ins += 1
        async with httpx.AsyncClient(timeout=30) as http:
            page = await http.get(authorization_url, follow_redirects=True)
            assert page.status_code == 200, page.text[:500]
            csrf = re.search(r'name="csrf" value="([^"]*)"', page.text)
            request = re.search(r'name="request" value="([^"]*)"', page.text)
            assert csrf and request, page.text[:500]
            form = {"csrf": csrf[1], "request": request[1], "username": OPERATOR, "password": PASSWORD}
            signed = await http.post(str(page.url), data=form)
        assert signed.status_code == 302, signed.text[:500]
        location = urlsplit(signed.headers["location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
        self.answer = parse_qs(location.query)

    async def callback(self) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        first = {k: v[0] for k, v in self.answer.items()}
        return AuthorizationCodeResult(code=first["code"], state=first.get("state"), iss=first.get("iss"))


async def _call_tools(
    fleet: Fleet, storage: Memory, browser: Browser, times: int, until: asyncio.Task[None] | None = None
) -> int:
    """One MCP session through the fleet's URL: initialize, list the tools, call `list_templates` `times` times
    (and on until `until` is done); the calls made."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    # The SDK's own client factory: its OAuth provider is an auth flow for the HTTP client the SDK ships with
    # (a plain httpx.AsyncClient refuses it); fenced by pyproject's mcp<3.
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import OAuthClientMetadata

    metadata = OAuthClientMetadata(
        redirect_uris=[REDIRECT],
        client_name="fleet assistant",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    auth = OAuthClientProvider(
        f"{fleet.url}/mcp", metadata, storage, redirect_handler=browser.open, callback_handler=browser.callback
    )
    async with (
        create_mcp_http_client(auth=auth) as http,
        streamable_http_client(f"{fleet.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        assert "list_templates" in tools, tools
        calls = 0
        while calls < times or (until is not None and not until.done()):
            result = await session.call_tool("list_templates", {})
            assert not result.is_error, result
            assert isinstance(result.structured_content, dict), result
            calls += 1
        return calls


async def test_the_mcp_sdk_client_registers_once_calls_every_server_and_keeps_working_across_a_rolling_restart(
    fleet: Fleet,
) -> None:
    storage, browser = Memory(), Browser()
    before = await fleet.answered()
    await _call_tools(fleet, storage, browser, times=2 * len(fleet.servers))
    after = await fleet.answered()
    assert (storage.registrations, browser.sign_ins, storage.token_sets) == (1, 1, 1)
    if len(fleet.servers) > 1:  # tool calls (and the OAuth steps) answered by every server
        assert len(after) == len(fleet.servers) and all(after[s] > before[s] for s in after), (before, after)
    if len(fleet.servers) > 1:  # /mcp is stateless: one session goes on while each server goes and comes back
        async with fleet.rolling() as restarting:
            assert await _call_tools(fleet, storage, browser, times=1, until=restarting) > 3
    else:  # one server's restart is downtime
        await fleet.rolling_restart()
    await _call_tools(fleet, storage, browser, times=len(fleet.servers))
    # the same client and token: no registration, no sign-in, no new token
    assert (storage.registrations, browser.sign_ins, storage.token_sets) == (1, 1, 1)
