"""REST specifics: every catalog operation is reachable, envelopes and status codes, request ids, health."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk.operations import CATALOG
from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server


def _fill(path: str) -> str:
    return re.sub(r"{(\w+)}", lambda m: f"x-{m.group(1)}", path)


async def test_every_operation_is_reachable(rest: httpx.AsyncClient) -> None:
    """Each REST path of each operation routes to that operation: never 404 "no route" or 405."""
    for spec in CATALOG.values():
        assert spec.rest is not None
        for path in spec.rest.paths:
            r = await rest.request(spec.rest.method, _fill(path), json={} if spec.body_fields else None)
            assert r.status_code != 405, (spec.name, path)
            if r.status_code == 404:  # must be the envelope of an entity lookup, not a missing route
                assert r.json()["error_code"].endswith("NOT_FOUND"), (spec.name, path, r.text)
            assert "error_code" in r.json() or r.status_code < 400, (spec.name, path)


async def test_statuses_of_the_spec(rest: httpx.AsyncClient) -> None:
    r = await rest.post("/api/v1/templates", json={"templateId": "web", "imageId": "ami-1"})
    assert r.status_code == 201 and r.json()["template_id"] == "web"
    r = await rest.post("/api/v1/machines", json={"templateId": "web", "machineCount": 1})
    assert r.status_code == 202 and r.json()["status"] == "submitted"
    rid = r.json()["request_id"]
    r = await rest.post("/api/v1/machines/request", json={"template_id": "web", "count": 1})
    assert r.status_code == 202
    for path in (f"/api/v1/requests/{rid}", f"/api/v1/requests/{rid}/status"):
        body = (await rest.get(path)).json()
        assert body["request_id"] == rid and "machines" in body and body["count"] == 1
    assert len((await rest.get(f"/api/v1/requests/{rid}")).json()["machines"]) == 1  # REST default long=true
    assert (await rest.get(f"/api/v1/requests/{rid}", params={"long": "false"})).json()["machines"] == []
    r = await rest.delete(f"/api/v1/requests/{rid}", params={"reason": "test"})
    assert r.status_code in (200, 409)
    r = await rest.get("/api/v1/requests/status", params=[("request_ids", rid), ("request_ids", "req-x")])
    assert r.json()["not_found"] == ["req-x"]


async def test_a_create_that_stores_nothing_answers_200(rest: httpx.AsyncClient) -> None:
    """`validate_only` / `dry_run`: 200, not 201/202, since nothing was created (the links of 201/202 would
    lead to a 404); the document lists that 200 without links."""
    r = await rest.post("/api/v1/templates", json={"templateId": "dry", "imageId": "ami-1", "validateOnly": True})
    assert r.status_code == 200 and r.json()["template_id"] == "dry"
    assert (await rest.get("/api/v1/templates/dry")).status_code == 404
    assert (await rest.post("/api/v1/templates", json={"templateId": "web", "imageId": "ami-1"})).status_code == 201
    for path in ("/api/v1/machines", "/api/v1/machines/request"):
        r = await rest.post(path, json={"templateId": "web", "machineCount": 1, "dryRun": True})
        assert r.status_code == 200, r.text
        body = r.json()  # no id of a request that was never recorded (listing B's string field is empty)
        assert body.get("request_id", "") is None or body.get("requestId") == "", body
    document = (await rest.get("/openapi.json")).json()
    for path, created in (("/api/v1/templates", "201"), ("/api/v1/machines", "202")):
        responses = document["paths"][path]["post"]["responses"]
        assert "links" in responses[created] and "links" not in responses["200"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("POST", "/api/v1/templates", {"templateId": "x"}, 400, "VALIDATION_ERROR"),
        ("POST", "/api/v1/templates", "not an object", 400, "VALIDATION_ERROR"),
        ("GET", "/api/v1/templates/nope", None, 404, "TEMPLATE_NOT_FOUND"),
        ("GET", "/api/v1/requests/req-nope", None, 404, "REQUEST_NOT_FOUND"),
        ("GET", "/api/v1/machines/i-nope", None, 404, "MACHINE_NOT_FOUND"),
        ("GET", "/api/v1/templates", None, 200, None),
        ("GET", "/api/v1/templates?limit=0", None, 400, "VALIDATION_ERROR"),
        ("GET", "/api/v1/machines?status=sleeping", None, 400, "VALIDATION_ERROR"),
    ],
)
async def test_error_envelope(
    rest: httpx.AsyncClient, method: str, path: str, body: Any, status: int, code: str | None
) -> None:
    r = await rest.request(method, path, json=body)
    assert r.status_code == status, r.text
    if code is not None:
        env = r.json()
        assert env["success"] is False and env["error_code"] == code
        assert isinstance(env["error"], str) and isinstance(env["details"], dict)


async def test_invalid_json_body(rest: httpx.AsyncClient) -> None:
    r = await rest.post("/api/v1/templates", content=b"{broken", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error_code"] == "VALIDATION_ERROR"


async def test_authentication_and_request_ids(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    await admin_key(config)
    with running_server(config) as url:
        async with httpx.AsyncClient(base_url=url) as anon:
            r = await anon.get("/api/v1/templates")
            assert r.status_code == 401 and r.json()["error_code"] == "UNAUTHENTICATED"
            assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"])
            r = await anon.get(
                "/api/v1/templates", headers={"Authorization": "psdk_not-a-real-key", "X-Request-ID": "abc"}
            )
            assert r.status_code == 401 and r.headers["x-request-id"] == "abc"
            assert "psdk_not-a-real-key" not in r.text
            assert (await anon.get("/api/version")).status_code == 200  # bootstrap routes need no credentials
            health = await anon.get("/health")
            assert health.status_code == 200 and health.json()["store"] == "ok"


async def test_openapi_document_describes_the_routes(rest: httpx.AsyncClient) -> None:
    doc = (await rest.get("/openapi.json")).json()
    ops = {op["operationId"] for item in doc["paths"].values() for op in item.values() if isinstance(op, dict)}
    assert set(CATALOG) <= ops
    create = doc["paths"]["/api/v1/machines"]["post"]
    assert "202" in create["responses"] and "400" in create["responses"]
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["requested_count"]["description"].startswith("How many machines")
    assert "RequestCreated" in doc["components"]["schemas"]
