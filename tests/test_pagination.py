"""Auto-paginating iteration over list operations — on both backends."""

from __future__ import annotations

from pluginsdk import PluginSDK


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
