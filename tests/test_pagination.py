"""Auto-paginating iteration over list operations — on both backends."""

from __future__ import annotations

import typing

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
