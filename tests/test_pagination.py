"""Auto-paginating iteration over list operations — on both backends."""

from __future__ import annotations

import asyncio
import time
import typing
from pathlib import Path

import httpx
import pytest

from pluginsdk import PluginSDK
from pluginsdk.errors import ValidationError
from pluginsdk.operations import CATALOG


async def test_iterate_walks_every_page(sdk: PluginSDK) -> None:
    for i in range(7):
        await sdk.create_template(template_id=f"t{i}", image_id="ami-1")
    seen = [t.template_id async for t in sdk.iterate("list_templates", limit=3)]
    assert seen == [f"t{i}" for i in range(7)]
    assert [t.template_id async for t in sdk.iterate("list_templates", limit=3, offset=5)] == ["t5", "t6"]


async def test_iterate_token_pages(sdk: PluginSDK) -> None:
    for i in range(5):
        await sdk.create_api_key(api_key_name=f"k{i}", description="pagination test", user_id="administrator")
    names = [
        k.api_key_name async for k in sdk.iterate("list_api_keys", page_size=2) if k.api_key_name != "test-harness"
    ]
    assert sorted(names) == [f"k{i}" for i in range(5)]


def test_every_paged_operation_returns_a_page() -> None:
    """An operation with page fields (`starting_token`, or `limit` and `offset`) returns a `Paged` result:
    `iterate` reads its items, and a type checker knows their type from `page_items()`'s annotation."""
    for name, spec in CATALOG.items():
        fields = set(spec.input_fields)
        if "starting_token" in fields or {"limit", "offset"} <= fields:
            method = getattr(spec.result_type, "page_items", None)
            assert method is not None, f"{name}: {spec.result_type.__name__} has no page_items()"
            assert typing.get_origin(typing.get_type_hints(method)["return"]) is list, name


async def test_iterating_an_operation_that_is_no_listing_is_an_error(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError, match="not a page of items"):
        [item async for item in sdk.iterate("get_system_status")]


async def test_an_active_listing_walk_keeps_full_pages_and_its_total_while_requests_finish(
    backend_kind: str, tmp_path: Path
) -> None:
    """30 requests active when the walk starts finish halfway through it: every page stays full, every total
    30, and the walk sees each request once — the view of the first page (`as_of`), not a shrinking set."""
    from tests.support.backends import open_sdk

    slow = {"local": {"boot_delay": 4.0, "terminate_delay": 0.05, "seed": 7}}
    async with open_sdk(backend_kind, tmp_path, provider=slow) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        ids = {(await sdk.create_request("web", 1)).request_id for _ in range(30)}
        first = await sdk.list_active_requests(limit=2)
        assert first.total_count == 30 and len(first.requests) == 2 and first.as_of is not None
        seen = [r.request_id for r in first.requests]
        finished: list[str] = []
        for offset in range(2, 30, 2):
            if offset == 16:  # halfway: every request finishes
                await _all_finished(sdk, ids)
            page = await sdk.list_active_requests(limit=2, offset=offset, as_of=first.as_of)
            assert (len(page.requests), page.total_count, page.as_of) == (2, 30, first.as_of)
            seen += [r.request_id for r in page.requests]
            finished += [r.request_id for r in page.requests if r.status.terminal]
        assert sorted(seen) == sorted(ids) and len(finished) == 14  # each once; those after halfway finished
        walked = [r.request_id async for r in sdk.iterate("list_active_requests", limit=4)]
        assert walked == []  # a new walk takes a new view: nothing is active now
        assert (await sdk.list_active_requests(limit=2)).total_count == 0


async def _all_finished(sdk: PluginSDK, ids: set[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        statuses = (await sdk.get_request_status(sorted(ids))).requests
        if all(r.status.terminal for r in statuses):
            return
        await asyncio.sleep(0.2)
    raise AssertionError("the requests did not finish")


async def test_a_bad_as_of_is_a_4xx_in_the_one_envelope(rest: httpx.AsyncClient) -> None:
    for bad in ("yesterday", "2026-13-40T00:00:00", "x" * 5000):
        answer = await rest.get("/api/v1/requests/active", params={"as_of": bad})
        assert 400 <= answer.status_code < 500 and "error_code" in answer.json(), answer.text
    ok = await rest.get("/api/v1/requests/active", params={"as_of": "2026-01-01T00:00:00Z", "limit": 2})
    assert ok.status_code == 200 and ok.json()["as_of"] == "2026-01-01T00:00:00.000000+00:00"
    assert "as_of" not in (await rest.get("/api/v1/requests")).json()  # other listings leave it out
