"""The OpenAPI document of the auth-service routes against the spec's wire names, read by clients nobody here
wrote: openapi-core validates real traffic (spec-shaped camelCase requests as the VAMS web client sends
them, and the server's answers) against the document; openapi-typescript + openapi-fetch compile a small
typed client under `tsc --strict` and run it against the server; Spectral's `spectral:oas` rules find
nothing. And what the document itself promises: typed date branches, one `Input` per request component,
described tags and operations, `update_api_key` listing only what it takes.

The npm clients are shared by every test (`tests/support/npm.py`); openapi-core is in the `dev` extra.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.backends import base_config
from tests.support.npm import unavailable
from tests.support.remote import admin_key, running_server

HERE = Path(__file__).parent


class Served:
    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key
        self.http = httpx.Client(base_url=url, headers={"Authorization": key}, timeout=30)
        self.document: dict[str, Any] = self.http.get("/openapi.json").json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    config = base_config(tmp_path_factory.mktemp("openapi-wire"))
    key = asyncio.run(admin_key(config))
    with running_server(config) as url:
        s = Served(url, key)
        yield s
        s.http.close()


def _in_days(days: int) -> str:
    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)).date().isoformat()


SPEC_SHAPED: list[tuple[str, str, dict[str, Any] | None, Any]] = [
    # (method, path, query, body): the names of the auth-service spec and the VAMS forms
    ("POST", "/roles", None, {"roleName": "reviewers", "description": "Reviews assets", "id": "",
                              "sourceIdentifier": "", "mfaRequired": False}),
    ("POST", "/user-roles", None, {"userId": "alice@example.com", "roleName": ["reviewers"]}),
    ("POST", "/auth/constraints/c-reviewers", None, {
        "constraintId": "c-reviewers", "name": "reviewers", "description": "Reviewers read db1", "objectType": "asset",
        "criteriaAnd": [{"id": "row-1", "field": "databaseId", "operator": "equals", "value": "db1"}],
        "criteriaOr": [], "userPermissions": [],
        "groupPermissions": [{"id": "row-2", "groupId": "reviewers", "permission": "GET", "permissionType": "allow"}],
    }),
    ("GET", "/auth/constraints", {"pageSize": "10", "maxItems": "20"}, None),
    ("POST", "/auth/check", None, {"userId": "alice@example.com", "objectType": "asset",
                                   "attributes": {"databaseId": "db1"}, "method": "GET"}),
    ("POST", "/auth/check/batch", None, {"questions": [{"userId": "alice@example.com", "objectType": "asset",
                                                        "attributes": {"databaseId": "db1"}, "method": "GET"}],
                                         "allowedOnly": True}),
    ("POST", "/auth/whoCan", None, {"objectType": "asset", "attributes": {"databaseId": "db1"}, "method": "GET"}),
    ("POST", "/auth/whatIf", None, {"deleteConstraintIds": ["c-reviewers"], "limit": 10,
                                    "objects": [{"objectType": "asset", "attributes": {"databaseId": "db1"}}]}),
    ("POST", "/auth/api-keys", None, {"apiKeyName": "ci-key", "description": "Runs the CI jobs",
                                      "userId": "administrator", "expiresAt": _in_days(200)}),
    ("GET", "/auth/api-keys", {"pageSize": "5"}, None),
    ("PUT", "/auth/api-keys/{made}", None, {"description": "Runs the nightly jobs", "expiresAt": ""}),
    ("PUT", "/auth/api-keys/{made}", None, {"isActive": "false"}),
    ("GET", "/auth/audit", {"pageSize": "5", "targetType": "role"}, None),
]  # fmt: skip


def test_spec_shaped_traffic_validates_against_the_document(served: Served) -> None:
    """Each spec-shaped request is valid by the document, the server answers it 2xx, and the answer is valid."""
    if importlib.util.find_spec("openapi_core") is None:
        unavailable("openapi-core is not installed (it is in the dev extra of pyproject.toml)")
    import requests
    from openapi_core import OpenAPI
    from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse

    openapi = OpenAPI.from_dict(served.document)
    made = ""
    with requests.Session() as session:
        session.headers["Authorization"] = served.key
        for method, path, query, body in SPEC_SHAPED:
            url = served.url + path.replace("{made}", made)
            prepared = session.prepare_request(requests.Request(method, url, params=query, json=body))
            request = RequestsOpenAPIRequest(prepared)
            openapi.validate_request(request)  # raises, naming the field, where the document disagrees
            answer = session.send(prepared, timeout=30)
            assert answer.status_code < 300, (method, path, answer.text)
            openapi.validate_response(request, RequestsOpenAPIResponse(answer))
            if path == "/auth/api-keys" and method == "POST":
                made = answer.json()["apiKeyId"]


def test_snake_case_names_stay_accepted(served: Served) -> None:
    """Not in the document's schemas (its descriptions say so), still taken by the server."""
    made = served.http.post("/roles", json={"role_name": "snake-role", "description": "Snake case body"})
    assert made.status_code == 200, made.text
    listed = served.http.get("/auth/constraints", params={"page_size": 1})
    assert listed.status_code == 200, listed.text
    note = served.document["paths"]["/roles"]["post"]["description"]
    assert "camelCase" in note and "snake_case" in note


def test_update_api_key_lists_only_what_it_takes(served: Served) -> None:
    body = served.document["paths"]["/auth/api-keys/{api_key_id}"]["put"]["requestBody"]
    props = body["content"]["application/json"]["schema"]["properties"]
    assert set(props) == {"description", "expiresAt", "isActive", "apiKeyId"}
    made = served.http.post(
        "/auth/api-keys", json={"apiKeyName": "renamed", "description": "To be renamed", "userId": "administrator"}
    ).json()
    refused = served.http.put(f"/auth/api-keys/{made['apiKeyId']}", json={"apiKeyName": "x", "description": "abcd"})
    assert refused.status_code == 400, refused.text
    assert refused.json()["details"]["field"] == "apiKeyName"


def _branches(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for key in ("anyOf", "oneOf"):
            for branch in node.get(key, ()):
                yield f"{path}/{key}", branch
        for key, value in node.items():
            yield from _branches(value, f"{path}/{key}")
    elif isinstance(node, list):
        for value in node:
            yield from _branches(value, path)


def test_every_branch_has_a_type(served: Served) -> None:
    untyped = [(p, b) for p, b in _branches(served.document) if "type" not in b and "$ref" not in b]
    assert untyped == []
    expiry = served.document["paths"]["/auth/api-keys"]["post"]["requestBody"]["content"]["application/json"]
    formats = {b.get("format") for _, b in _branches(expiry["schema"]["properties"]["expiresAt"])}
    assert {"date-time", "date"} <= formats


def test_component_names_say_input_once(served: Served) -> None:
    names = served.document["components"]["schemas"]
    assert [n for n in names if "InputInput" in n] == []
    assert {"CriterionInput", "GroupPermissionInput", "UserPermissionInput"} <= set(names)


def test_tags_and_operations_are_described(served: Served) -> None:
    tags = {t["name"]: t.get("description") for t in served.document["tags"]}
    for path, item in served.document["paths"].items():
        for method, op in item.items():
            assert op.get("description"), (method, path)
            assert all(tags.get(tag) for tag in op["tags"]), (method, path, op["tags"])


def test_spectral_oas_rules_find_nothing(served: Served, npm_clients: Path, tmp_path: Path) -> None:
    (tmp_path / "openapi.json").write_text(json.dumps(served.document))
    (tmp_path / ".spectral.yaml").write_text('extends: ["spectral:oas"]\n')
    done = subprocess.run(
        [str(npm_clients / "node_modules" / ".bin" / "spectral"), "lint", "openapi.json", "--ruleset",
         ".spectral.yaml", "--format", "json", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    findings = json.loads(done.stdout or "[]")
    assert [(f["code"], f["message"], f["path"]) for f in findings] == [], done.stderr[-2000:]


def test_typed_client_compiles_strict_and_runs(served: Served, npm_clients: Path, tmp_path: Path) -> None:
    """openapi-typescript's types of the document make `tsc --strict` accept the spec-shaped calls of
    `ts_openapi/client.ts`; compiled, the client sends them and the server answers each 2xx."""
    bin_dir = npm_clients / "node_modules" / ".bin"
    (tmp_path / "node_modules").symlink_to(npm_clients / "node_modules")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    for name in ("client.ts", "tsconfig.json"):
        shutil.copy2(HERE / "ts_openapi" / name, tmp_path / name)
    (tmp_path / "openapi.json").write_text(json.dumps(served.document))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)

    generated = run(str(bin_dir / "openapi-typescript"), "openapi.json", "-o", "schema.d.ts")
    assert generated.returncode == 0, generated.stdout + generated.stderr
    compiled = run(str(bin_dir / "tsc"), "-p", "tsconfig.json")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    ran = run("node", "out/client.js", served.url, served.key)
    assert ran.returncode == 0, ran.stderr[-2000:]
    statuses = json.loads(ran.stdout.splitlines()[-1])
    assert len(statuses) == 8 and all(200 <= s < 300 for s in statuses.values()), statuses
