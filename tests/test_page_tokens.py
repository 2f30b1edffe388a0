"""Pagination tokens altered in any way are 400 `Invalid pagination token` — including
alterations a base64 decoder forgives: padding, characters outside the alphabet, unused low bits."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from pluginsdk import PluginSDK
from pluginsdk._pagination import is_canonical_token
from pluginsdk.errors import InvalidPaginationToken
from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _decode(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _same_bytes_other_text(token: str) -> str:
    """The token with the last character's unused low bits flipped: a lenient decoder reads the same bytes."""
    body, sig = token.rsplit(".", 1)
    if len(sig) % 4 == 0:  # no unused bits in this segment: use the body instead
        body, sig = sig, body
        swapped = True
    else:
        swapped = False
    last = _ALPHABET.index(sig[-1])
    altered = sig[:-1] + _ALPHABET[last ^ 1]
    assert altered != sig and _decode(altered) == _decode(sig)
    return f"{altered}.{body}" if swapped else f"{body}.{altered}"


def alterations(token: str) -> dict[str, str]:
    body, sig = token.rsplit(".", 1)
    flipped = sig[:-3] + ("A" if sig[-3] != "A" else "B") + sig[-2:]
    return {
        "one = appended": token + "=",
        "two = appended": token + "==",
        "= before the dot": f"{body}=.{sig}",
        "= inside": f"{body[:4]}={body[4:]}.{sig}",
        "padded segments": f"{body}{'=' * (-len(body) % 4)}.{sig}{'=' * (-len(sig) % 4)}",
        "unused bits flipped": _same_bytes_other_text(token),
        "character flipped": f"{body}.{flipped}",
        "trailing space": token + " ",
        "leading space": " " + token,
        "trailing newline": token + "\n",
        "character outside the alphabet": f"{body}*.{sig}",
        "standard alphabet": token.replace("-", "+").replace("_", "/")
        if ("-" in token or "_" in token)
        else token + "+",
        "extra segment": token + ".AAAA",
        "dot appended": token + ".",
        "truncated": token[:-1],
        "empty": "",
        "huge": token + "A" * 10_000,
    }


async def _token(sdk: PluginSDK) -> str:
    for i in range(3):
        await sdk.create_api_key(api_key_name=f"page{i}", description="paging keys", user_id="administrator")
    page = await sdk.list_api_keys(page_size=1)
    assert page.next_token is not None and is_canonical_token(page.next_token)
    return page.next_token


async def test_altered_tokens_are_invalid_on_both_backends(sdk: PluginSDK) -> None:
    token = await _token(sdk)
    for name, altered in alterations(token).items():
        assert altered != token, name
        with pytest.raises(InvalidPaginationToken) as exc:
            await sdk.list_api_keys(page_size=1, starting_token=altered)
        assert exc.value.message == "Invalid pagination token" and exc.value.status == 400, name
        assert exc.value.code == "INVALID_PAGINATION_TOKEN", name
    second = await sdk.list_api_keys(page_size=1, starting_token=token)  # the real one still works
    assert len(second.items) == 1


async def test_altered_constraint_tokens_are_invalid(sdk: PluginSDK) -> None:
    for i in range(3):
        await sdk.create_constraint(
            constraint_id=f"c{i}",
            name="n",
            description="paging constraints",
            object_type="template",
            criteria_and=[{"field": "templateId", "operator": "equals", "value": "x"}],
            group_permissions=[{"groupId": "admin", "permission": "GET", "permissionType": "allow"}],
        )
    token = (await sdk.list_constraints(page_size=1)).message.next_token
    assert token is not None
    for name, altered in alterations(token).items():
        with pytest.raises(InvalidPaginationToken):
            await sdk.list_constraints(page_size=1, starting_token=altered)
        assert name


@pytest.fixture
async def rest(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    config = base_config(tmp_path)
    key = await admin_key(config)
    with running_server(config) as url:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": key}, timeout=30) as client:
            for i in range(3):
                r = await client.post(
                    "/auth/api-keys",
                    json={"apiKeyName": f"page{i}", "description": "paging keys", "userId": "administrator"},
                )
                assert r.status_code in (200, 201), r.text
            page = await client.get("/auth/api-keys", params={"pageSize": 1})
            yield client, page.json()["NextToken"]


async def test_rest_altered_tokens_are_400(rest: tuple[httpx.AsyncClient, str]) -> None:
    client, token = rest
    for name, altered in alterations(token).items():
        if name == "huge":
            continue  # a URL that long is the server's 414, not a token question
        r = await client.get("/auth/api-keys", params={"pageSize": 1, "startingToken": altered})
        assert r.status_code == 400, (name, r.text)
        body = r.json()
        assert body["error_code"] == "INVALID_PAGINATION_TOKEN" and body["error"] == "Invalid pagination token", name
    ok = await client.get("/auth/api-keys", params={"pageSize": 1, "startingToken": token})
    assert ok.status_code == 200
