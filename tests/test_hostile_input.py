"""Hostile values: NaN and infinity, lone surrogates, NUL, out-of-range integers and dates,
deep nesting — each a 400 VALIDATION_ERROR on every interface with nothing stored; and a stored row that no
longer validates never breaks a listing for everyone."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk import PluginSDK
from pluginsdk.errors import ValidationError
from pluginsdk.models.values import MAX_DEPTH
from tests.support.backends import base_config, open_sdk

TEMPLATE = {"template_id": "t1", "image_id": "ami-1", "provider_api": "local"}


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"n": value}
    return value


HOSTILE_TEMPLATES: dict[str, dict[str, Any]] = {
    "nan weight": {"instance_types": {"t3.small": math.nan}},
    "infinite weight": {"instance_types": {"t3.small": math.inf}},
    "-infinite weight": {"instance_types": {"t3.small": -math.inf}},
    "nan in configuration": {"configuration": {"spot": {"max_price": math.nan}}},
    "infinity in a list": {"configuration": {"prices": [1.0, math.inf]}},
    "lone surrogate in a name": {"name": "web \ud800"},
    "lone surrogate in a tag key": {"tags": {"\udfff": "x"}},
    "NUL in user data": {"user_data": "#!/bin/sh\x00rm -rf /"},
    "integer beyond 64 bits": {"configuration": {"count": 2**64}},
    "negative integer beyond 64 bits": {"configuration": {"count": -(2**63) - 1}},
    "max_number out of range": {"max_number": 2**70},
    "nesting too deep": {"configuration": _nested(MAX_DEPTH + 5)},
}


@pytest.mark.parametrize("case", sorted(HOSTILE_TEMPLATES))
async def test_hostile_template_values_are_refused_and_nothing_is_stored(sdk: PluginSDK, case: str) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_template(**TEMPLATE, **HOSTILE_TEMPLATES[case])
    assert exc.value.code == "VALIDATION_ERROR" and exc.value.status == 400
    json.dumps(exc.value.to_envelope(), allow_nan=False, ensure_ascii=False).encode("utf-8")  # renders cleanly
    listing = await sdk.list_templates()
    assert listing.total_count == 0


async def test_hostile_values_in_updates_and_requests_are_refused(sdk: PluginSDK) -> None:
    await sdk.create_template(**TEMPLATE)
    with pytest.raises(ValidationError):
        await sdk.update_template(template_id="t1", instance_types={"t3.small": math.nan})
    with pytest.raises(ValidationError):
        await sdk.create_request(template_id="t1", count=1, additional_data={"x": math.inf}, dry_run=True)
    with pytest.raises(ValidationError):
        await sdk.create_request(template_id="t1", count=1, tags={"k": "\ud83d"}, dry_run=True)
    with pytest.raises(ValidationError):
        await sdk.cleanup_old_requests(older_than_days=math.nan)
    with pytest.raises(ValidationError):
        await sdk.list_templates(limit=2**80)
    shown = await sdk.get_template(template_id="t1")
    assert shown.template.instance_types == {}
    assert (await sdk.list_requests()).total_count == 0


@pytest.mark.parametrize(
    "expires_at",
    [
        "9999-12-31T23:59:59-14:00",  # after year 9999 once in UTC
        "0001-01-01T00:00:00+01:00",  # before year 1 once in UTC
        "99999-01-01T00:00:00Z",
        "2030-02-30T00:00:00Z",
        "2030-01-01T00:00:00Z" + "0" * 100,
    ],
)
async def test_expiry_out_of_range_is_a_validation_error(sdk: PluginSDK, expires_at: str) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_api_key(
            api_key_name="k", description="hostile expiry", user_id="administrator", expires_at=expires_at
        )
    assert exc.value.status == 400 and exc.value.details["field"] == "expires_at"
    with pytest.raises(ValidationError):
        await sdk.create_my_api_key(api_key_name="k", description="hostile expiry", expires_at=expires_at)
    keys = await sdk.list_api_keys()
    assert all(k.api_key_name != "k" for k in keys.items)


async def test_latest_representable_expiry_is_accepted(sdk: PluginSDK) -> None:
    created = await sdk.create_api_key(
        api_key_name="far", description="far future", user_id="administrator", expires_at="9999-12-31T09:00:00-14:00"
    )
    with pytest.raises(ValidationError):
        await sdk.update_api_key(api_key_id=created.api_key_id, expires_at="9999-12-31T23:59:59-14:00")


# -- stored rows that no longer validate ------------------------------------------------------------------
def _corrupt(store: Path, template_id: str, data: str) -> None:
    """What an older version (NaN written as null) or a hand edit left in the store."""
    with sqlite3.connect(store) as db:
        db.execute("UPDATE templates SET data = ? WHERE template_id = ?", (data, template_id))


@pytest.mark.parametrize(
    "weight",
    ["null", "NaN", "Infinity", '"heavy"'],
)
async def test_a_bad_stored_template_does_not_break_listings(
    backend_kind: str, tmp_path: Path, weight: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_sdk("local", tmp_path) as local:
        await local.create_template(**TEMPLATE, instance_types={"t3.small": 1.0})
        await local.create_template(template_id="t2", image_id="ami-2", provider_api="local")
    row = json.loads(
        sqlite3.connect(tmp_path / "store.db")
        .execute("SELECT data FROM templates WHERE template_id='t1'")
        .fetchone()[0]
    )
    text = json.dumps(row).replace('{"t3.small": 1.0}', '{"t3.small": ' + weight + "}")
    assert weight in text
    _corrupt(tmp_path / "store.db", "t1", text)
    async with open_sdk(backend_kind, tmp_path) as sdk:
        listing = await sdk.list_templates()  # every user's listing still answers
        assert [t.template_id for t in listing.templates] == ["t1", "t2"]
        shown = (await sdk.get_template(template_id="t1")).template
        assert shown.instance_types == {}  # the broken field shows its default until rewritten
        await sdk.update_template(template_id="t1", instance_types={"t3.large": 2.0})
        assert (await sdk.get_template(template_id="t1")).template.instance_types == {"t3.large": 2.0}
        await sdk.delete_template(template_id="t1")
        assert [t.template_id for t in (await sdk.list_templates()).templates] == ["t2"]
    if backend_kind == "local":
        assert any("instance_types" in r.getMessage() and "t1" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("value", ["NaN", "-Infinity", '"\\ud800"', '{"deep": [NaN]}'])
async def test_a_stored_free_form_value_no_encoder_takes_does_not_break_listings(
    backend_kind: str, tmp_path: Path, value: str
) -> None:
    async with open_sdk("local", tmp_path) as local:
        await local.create_template(**TEMPLATE, configuration={"spot": 1})
    with sqlite3.connect(tmp_path / "store.db") as db:
        text = db.execute("SELECT data FROM templates WHERE template_id='t1'").fetchone()[0]
    assert '{"spot":1}' in text
    _corrupt(tmp_path / "store.db", "t1", text.replace('{"spot":1}', '{"spot":' + value + "}"))
    async with open_sdk(backend_kind, tmp_path) as sdk:  # remote: the server renders strict JSON
        listing = await sdk.list_templates()
        assert [(t.template_id, t.configuration) for t in listing.templates] == [("t1", {})]
        assert (await sdk.get_template(template_id="t1")).template.configuration == {}


async def test_an_unreadable_stored_template_is_skipped(tmp_path: Path) -> None:
    async with open_sdk("local", tmp_path) as local:
        await local.create_template(**TEMPLATE)
        await local.create_template(template_id="t2", image_id="ami-2", provider_api="local")
    _corrupt(tmp_path / "store.db", "t1", "{not json")
    async with open_sdk("local", tmp_path) as sdk:
        assert [t.template_id for t in (await sdk.list_templates()).templates] == ["t2"]


# -- REST: the same values as raw JSON text ---------------------------------------------------------------
_BASE = '"template_id":"t1","image_id":"ami-1","provider_api":"local"'
RAW_BODIES = {
    "number overflowing to infinity": "{" + _BASE + ',"instance_types":{"t3.small":1e400}}',
    "NaN literal": "{" + _BASE + ',"instance_types":{"t3.small":NaN}}',
    "-Infinity literal": "{" + _BASE + ',"configuration":{"p":-Infinity}}',
    "lone surrogate escape": "{" + _BASE + ',"name":"web \\ud800"}',
    "lone surrogate in a key": "{" + _BASE + ',"tags":{"\\udc00":"x"}}',
    "NUL escape": "{" + _BASE + ',"user_data":"a\\u0000b"}',
    "integer beyond 64 bits": "{" + _BASE + ',"configuration":{"n":18446744073709551616}}',
    "max_number beyond 64 bits": "{" + _BASE + ',"max_number":99999999999999999999999}',
    "deep nesting": "{" + _BASE + ',"configuration":' + '{"n":' * 40 + "1" + "}" * 40 + "}",
}


@pytest.mark.parametrize("case", sorted(RAW_BODIES))
async def test_rest_hostile_bodies_are_400_and_nothing_is_stored(rest: httpx.AsyncClient, case: str) -> None:
    r = await rest.post(
        "/api/v1/templates", content=RAW_BODIES[case].encode(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["success"] is False and body["error_code"] == "VALIDATION_ERROR"
    listing = await rest.get("/api/v1/templates")
    assert listing.status_code == 200 and listing.json()["total_count"] == 0


async def test_rest_expiry_out_of_range_is_400(rest: httpx.AsyncClient) -> None:
    body = {"apiKeyName": "k", "description": "far away", "userId": "administrator"}
    r = await rest.post("/auth/api-keys", json={**body, "expiresAt": "9999-12-31T23:59:59-14:00"})
    assert r.status_code == 400 and r.json()["error_code"] == "VALIDATION_ERROR", r.text
    r = await rest.get("/api/v1/templates", params={"limit": "NaN"})
    assert r.status_code == 400 and r.json()["error_code"] == "VALIDATION_ERROR", r.text
    r = await rest.get("/api/v1/templates", params={"limit": str(2**80)})
    assert r.status_code == 400, r.text


# -- PostgreSQL: the limits are what it holds -------------------------------------------------------------
@pytest.fixture
async def pg_config(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    import asyncio
    import uuid

    asyncpg = pytest.importorskip("asyncpg")
    try:
        admin = await asyncio.wait_for(asyncpg.connect("postgresql://postgres@127.0.0.1:5432/test"), 3)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL not reachable on 127.0.0.1:5432: {exc}")
    name = f"psdk_{uuid.uuid4().hex[:10]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base_config(
            tmp_path, storage={"type": "postgresql", "url": f"postgresql://postgres@127.0.0.1:5432/{name}"}
        )
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.mark.postgres
async def test_hostile_values_on_postgres_and_the_edges_stored(pg_config: dict[str, Any]) -> None:
    async with PluginSDK(config=pg_config) as sdk:
        for case, extra in HOSTILE_TEMPLATES.items():
            with pytest.raises(ValidationError):
                await sdk.create_template(**TEMPLATE, **extra)
            assert case
        await _edges_are_stored(sdk)


EDGES: dict[str, Any] = {
    "name": "caf\u00e9 \u2713 \U0001f680",
    "configuration": {"big": 2**63 - 1, "small": -(2**63), "tiny": 5e-324, "huge": 1.7976931348623157e308},
    "tags": {"k\u00e9y": "v\u00e4lue"},
    "max_number": 1_000_000,
}


async def _edges_are_stored(sdk: PluginSDK) -> None:
    """The largest integers, extreme finite floats and non-ASCII text (surrogate pairs included) round-trip."""
    await sdk.create_template(**TEMPLATE, **EDGES)
    shown = (await sdk.get_template(template_id="t1")).template
    assert shown.name == EDGES["name"] and shown.configuration == EDGES["configuration"]
    assert shown.tags == EDGES["tags"] and shown.max_number == 1_000_000
    assert (await sdk.list_templates()).total_count == 1


async def test_the_edges_of_the_limits_are_stored(sdk: PluginSDK) -> None:
    await _edges_are_stored(sdk)


async def test_rest_hostile_query_values_are_400(rest: httpx.AsyncClient) -> None:
    for path, params in [
        ("/api/v1/templates", {"provider_api": "a\x00b"}),
        ("/api/v1/requests", {"template_id": "we\u202eb"}),
        ("/api/v1/machines", {"template_id": "web\u200b"}),
        ("/api/v1/templates", {"offset": "1e400"}),
        ("/api/v1/requests/cleanup", None),
    ]:
        if params is None:
            r = await rest.post(path, json={"older_than_days": "NaN"})
        else:
            r = await rest.get(path, params=params)
        assert r.status_code == 400, (path, params, r.text)
        assert r.json()["error_code"] == "VALIDATION_ERROR"


async def test_rest_undecodable_path_and_query_are_400(rest: httpx.AsyncClient) -> None:
    """A percent-encoded surrogate (`%ED%A0%80`, not UTF-8) names nothing: 400, never a 500."""
    for url in [
        "/api/v1/templates/%ED%A0%80",
        "/api/v1/templates/%00",
        "/api/v1/templates/a%0Ab",
    ]:
        r = await rest.get(url)
        assert r.status_code == 400, (url, r.text)
        assert r.json()["success"] is False
    # a free-text filter decodes the bytes as U+FFFD (replacement characters): valid text that matches nothing
    r = await rest.get("/api/v1/templates?provider_api=%ED%A0%80")
    assert r.status_code == 200 and r.json()["total_count"] == 0


async def test_mcp_tools_refuse_hostile_values(local_sdk: PluginSDK) -> None:
    from tests.mcp.helpers import connect, data, failure

    async with connect(local_sdk) as client:
        for arguments in [
            {**TEMPLATE, "configuration": {"n": 2**64}},
            {**TEMPLATE, "name": "a\x00b"},
            {**TEMPLATE, "instance_types": {"t3.small": math.nan}},
            {**TEMPLATE, "template_id": "we\u202eb"},
        ]:
            res = await client.call_tool("create_template", arguments)
            assert res.is_error
            assert failure(res)["type"] == "ValidationError"
        listing = data(await client.call_tool("list_templates", {}))
        assert listing["total_count"] == 0


def test_cli_refuses_a_file_with_nan_and_a_bidi_id(tmp_path: Path) -> None:
    """The CLI reads JSON with Python's parser (which takes `NaN`): the operation refuses it all the same."""
    from tests.support.cli import cli_environment, invoke

    env = cli_environment(tmp_path)

    def run(*args: str) -> tuple[int, Any]:
        res = invoke(env, *args, "--format", "json", fmt=None)
        return res.code, res.json()

    nan_file = tmp_path / "t.json"
    nan_file.write_text('{"templateId": "t1", "imageId": "ami-1", "instanceTypes": {"t3.small": NaN}}')
    code, body = run("templates", "create", "--file", str(nan_file))
    assert code != 0 and body["error_code"] == "VALIDATION_ERROR"
    code, body = run("templates", "create", "--template-id", "we\u202eb", "--image-id", "ami-1")
    assert code != 0 and body["error_code"] == "VALIDATION_ERROR" and "U+202E" in body["error"]
    code, body = run("templates", "list")
    assert code == 0 and body["total_count"] == 0


async def test_template_files_with_values_no_encoder_takes_are_skipped(backend_kind: str, tmp_path: Path) -> None:
    files = tmp_path / "templates"
    files.mkdir()
    (files / "a.yaml").write_text("templateId: nan-price\nimageId: ami-1\nconfiguration:\n  max_price: .nan\n")
    (files / "b.yaml").write_text("templateId: inf-weight\nimageId: ami-1\ninstanceTypes:\n  t3.small: .inf\n")
    (files / "c.json").write_text('{"templateId": "nan-json", "imageId": "ami-1", "configuration": {"p": NaN}}')
    (files / "d.yaml").write_text("templateId: fine\nimageId: ami-1\nconfiguration:\n  max_price: 0.05\n")
    async with open_sdk(backend_kind, tmp_path, templates={"dir": str(files)}) as sdk:
        listing = await sdk.list_templates()
        assert [t.template_id for t in listing.templates] == ["fine"]
        assert listing.templates[0].configuration == {"max_price": 0.05}
