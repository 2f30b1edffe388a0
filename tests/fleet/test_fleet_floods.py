"""Floods from one address, spread by HAProxy over every server at once, end no other caller's session or
client: past `api.held.creations_per_window` (CREATIONS, counted in the store, so by every server together)
each `POST /register` and console sign-in from that address is a 429 with `Retry-After`, nothing is
evicted, an OAuth client registered earlier still signs its user in and gets a token, an administrator's
console session still opens pages, and another address still signs in. The flood comes from 127.0.0.2 (a
loopback address of its own: the other callers, and the package's other tests, are 127.0.0.1 and keep their
own budget) and sends a made-up `X-Forwarded-For` with each call: HAProxy replaces it with the caller's
address (docs/deployment.md), so it buys no fresh budget."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.console.conftest import PASSWORD
from tests.fleet.conftest import CREATIONS, OPERATOR
from tests.support.fleet import Fleet
from tests.support.npm import unavailable
from tests.support.oidc import Provider

pytestmark = pytest.mark.asyncio(loop_scope="package")

REDIRECT = "http://127.0.0.1:9/callback"
FLOOD = 3 * CREATIONS


def _registration(name: str) -> dict[str, object]:
    return {"redirect_uris": [REDIRECT], "client_name": name, "token_endpoint_auth_method": "none"}


async def _console_sign_in(client: httpx.AsyncClient, api_key: str, headers: dict[str, str]) -> httpx.Response:
    """The sign-in form fetched, then posted with `api_key` (its double-submit token from the form)."""
    form = await client.get("/ui/login", headers=headers)
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token, form.text[:500]
    return await client.post("/ui/login", data={"csrf": token[1], "api_key": api_key, "next": "/ui/"}, headers=headers)


def _elsewhere() -> httpx.AsyncHTTPTransport:
    """Connections from 127.0.0.2: the flooding address."""
    return httpx.AsyncHTTPTransport(local_address="127.0.0.2")


def _spoofed(i: int) -> dict[str, str]:
    """A made-up forwarded address: a different one each call."""
    return {"x-forwarded-for": f"203.0.113.{i % 250 + 1}"}


async def _stranger_signs_in(fleet: Fleet, api_key: str, i: int) -> httpx.Response:
    """A console sign-in from 127.0.0.2 by a browser of its own (its own form token)."""
    async with httpx.AsyncClient(base_url=fleet.url, timeout=60, transport=_elsewhere()) as browser:
        return await _console_sign_in(browser, api_key, _spoofed(i))


async def _token_for(http: httpx.AsyncClient, fleet: Fleet, client_id: str) -> httpx.Response:
    """The whole authorization-code flow of a registered public client, as its user's browser and the client."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    params = {
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "st",
        "code_challenge": challenge, "code_challenge_method": "S256", "resource": f"{fleet.url}/mcp",
    }  # fmt: skip
    page = await http.get("/authorize", params=params, follow_redirects=True)
    assert page.status_code == 200, page.text[:500]
    csrf = re.search(r'name="csrf" value="([^"]*)"', page.text)
    request = re.search(r'name="request" value="([^"]*)"', page.text)
    assert csrf and request
    form = {"csrf": csrf[1], "request": request[1], "username": OPERATOR, "password": PASSWORD}
    signed = await http.post(str(page.url), data=form)
    assert signed.status_code == 302, signed.text[:500]
    code = parse_qs(urlsplit(signed.headers["location"]).query)["code"][0]
    body = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": verifier}  # fmt: skip
    return await http.post("/token", data=body)


def _refused(answers: list[httpx.Response]) -> list[httpx.Response]:
    refused = [a for a in answers if a.status_code == 429]
    assert all(int(a.headers["retry-after"]) >= 1 for a in refused), [a.headers for a in refused]
    return refused


async def test_floods_from_one_address_end_no_other_callers_session_or_client(fleet: Fleet) -> None:
    async with (
        httpx.AsyncClient(base_url=fleet.url, timeout=60) as http,
        httpx.AsyncClient(base_url=fleet.url, timeout=60) as admin,
        httpx.AsyncClient(base_url=fleet.url, timeout=60, transport=_elsewhere()) as flooder,
    ):
        registered = await http.post("/register", json=_registration("kept assistant"))
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        signed = await _console_sign_in(admin, fleet.key, {})
        assert signed.status_code == 303, signed.text[:500]

        # the floods, all at once: HAProxy spreads them over every server
        registrations = await asyncio.gather(
            *(flooder.post("/register", json=_registration(f"flood {i}"), headers=_spoofed(i)) for i in range(FLOOD))
        )
        sign_ins = await asyncio.gather(*(_stranger_signs_in(fleet, f"psdk_junk{i}", i) for i in range(FLOOD)))

        made = [r for r in registrations if r.status_code == 201]
        assert len(made) == CREATIONS and len(_refused(registrations)) == FLOOD - CREATIONS, [
            (r.status_code, r.text[:200]) for r in registrations if r.status_code not in (201, 429)
        ]
        refused = _refused(registrations)[0].json()
        assert refused["error_code"] == "TOO_MANY_REQUESTS", refused
        # a junk key past the limit is refused before it is judged; within it, judged (401)
        assert sorted({s.status_code for s in sign_ins}) == [401, 429], [s.status_code for s in sign_ins]
        assert len(_refused(sign_ins)) == FLOOD - CREATIONS

        # no one else's state ended: the earlier client signs its user in, the administrator's session opens
        # pages on every server, and another address still signs in
        token = await _token_for(http, fleet, client_id)
        assert token.status_code == 200 and token.json()["access_token"], token.text
        for _ in range(len(fleet.servers)):
            page = await admin.get("/ui/templates")
            assert page.status_code == 200 and 'class="signout"' in page.text, page.text[:300]
        async with httpx.AsyncClient(base_url=fleet.url, timeout=60) as other:
            assert (await _console_sign_in(other, fleet.key, {})).status_code == 303


async def test_federated_starts_from_one_address_are_refused_past_the_limit_and_end_no_begun_sign_in(
    fleet: Fleet, fleet_idp: Provider | None
) -> None:
    if fleet_idp is None:
        unavailable("no OpenID provider: Node's clients are not at hand (tests/support/npm.py)")
    body = {"redirectUri": f"{fleet.url}/ui/sso/callback"}
    async with (
        httpx.AsyncClient(base_url=fleet.url, timeout=60) as http,
        httpx.AsyncClient(base_url=fleet.url, timeout=60, transport=_elsewhere()) as flooder,
    ):
        begun = await http.post("/auth/federation/start", json=body)
        assert begun.status_code == 200, begun.text
        starts = await asyncio.gather(
            *(flooder.post("/auth/federation/start", json=body, headers=_spoofed(i)) for i in range(FLOOD))
        )
        assert sum(s.status_code == 200 for s in starts) == CREATIONS, [s.status_code for s in starts]
        assert len(_refused(starts)) == FLOOD - CREATIONS
        assert (await flooder.get("/ui/sso/start", headers=_spoofed(0))).status_code == 429  # the console's too
        # the sign-in begun from another address is still begun: its code is judged (not an unknown state)
        kept = await http.post("/auth/federation/finish", json={"state": begun.json()["state"], "code": "c" * 8})
        assert kept.status_code != 429 and "unknown, used or expired" not in kept.text, kept.text
        assert (await http.post("/auth/federation/start", json=body)).status_code == 200  # another address
