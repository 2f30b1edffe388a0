"""The OpenAPI document as independent tools read it: openapi-spec-validator, Redocly's linter (recommended
rules), openapi-python-client (a generated client used against a real server), and what it declares
(security, unique names, stable operationIds, defaults, rules) held against what the server does.

Redocly is one of the npm clients every test shares (`tests/support/npm.py`: `tests/clients/package.json`
and its lockfile, installed into a cache directory outside the repository); the test skips, saying why,
only where Node.js/npm are absent or npm refuses the install.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic.alias_generators import to_snake

from pluginsdk.operations import CATALOG
from pluginsdk.server._openapi import SECURITY
from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server

HERE = Path(__file__).parent


class Served:
    def __init__(self, url: str, key: str, config: dict[str, Any]) -> None:
        self.url, self.key, self.config = url, key, config
        self.http = httpx.Client(base_url=url, headers={"Authorization": key}, timeout=30)
        self.document: dict[str, Any] = self.http.get("/openapi.json").json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    config = base_config(tmp_path_factory.mktemp("openapi"))
    key = asyncio.run(admin_key(config))
    with running_server(config) as url:
        s = Served(url, key, config)
        yield s
        s.http.close()


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield method.upper(), path, op


# -- independent validators --------------------------------------------------------------


def test_openapi_spec_validator_accepts_the_document(served: Served) -> None:
    from openapi_spec_validator import validate

    validate(served.document)


def test_redocly_recommended_rules_report_no_errors(served: Served, npm_clients: Path, tmp_path: Path) -> None:
    binary = npm_clients / "node_modules" / ".bin" / "redocly"
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(served.document))
    done = subprocess.run(
        [str(binary), "lint", str(path), "--extends=recommended", "--format=json"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    report = json.loads(done.stdout[done.stdout.index("{") :])
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert errors == [], errors
    assert done.returncode == 0, done.stderr


def _generate(served: Served, tmp_path: Path) -> Path:
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(served.document))
    (tmp_path / "config.yml").write_text(
        "post_hooks: []\nproject_name_override: psdk_client\npackage_name_override: psdk_client\n"
    )
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "openapi-python-client"),
            "generate",
            "--path",
            str(spec),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / "psdk_client"),
            "--config",
            str(tmp_path / "config.yml"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    return tmp_path


def test_generated_python_client_runs_one_operation_of_every_group(served: Served, tmp_path: Path) -> None:
    root = _generate(served, tmp_path)
    generated = {p.stem for p in (root / "psdk_client" / "api").rglob("*.py")}
    every = {o["operationId"] for _, _, o in _operations(served.document)}
    assert every - {"health"} <= generated  # nothing dropped (create_constraint, update_constraint, ...)
    sys.path.insert(0, str(root))
    try:
        client_mod = importlib.import_module("psdk_client")
        # The API key is the whole header value (no Bearer word): prefix "".
        client = client_mod.AuthenticatedClient(base_url=served.url, token=served.key, prefix="")
        calls = {
            "templates": ("list_templates", {}),
            "requests": ("list_requests", {}),
            "machines": ("list_machines", {}),
            "constraints": ("get_permission_objects", {}),
            "roles": ("list_roles", {}),
            "user_roles": ("list_user_roles", {}),
            "api_keys": ("list_api_keys", {}),
        }
        for group, (name, kwargs) in calls.items():
            module = importlib.import_module(f"psdk_client.api.{group}.{name}")
            response = module.sync_detailed(client=client, **kwargs)
            assert response.status_code == 200, (name, response.content)
            assert response.parsed is not None, name
            assert type(response.parsed).__name__ != "ErrorEnvelope", name
        # A write with a body model: create a role through the generated model.
        models = importlib.import_module("psdk_client.models")
        body_cls = next(getattr(models, n) for n in dir(models) if n.startswith("CreateRole") and "Body" in n)
        create_role = importlib.import_module("psdk_client.api.roles.create_role")
        made = create_role.sync_detailed(
            client=client, body=body_cls(role_name="generated-client", description="made by the generated client")
        )
        assert made.status_code == 200, made.content
        # The REST default of `long` (true) is what the generated client sends when the caller gives nothing.
        get_request = importlib.import_module("psdk_client.api.requests.get_request")
        assert inspect.signature(get_request.sync_detailed).parameters["long"].default is True
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "psdk_client" or m.startswith("psdk_client.")]:
            del sys.modules[name]


# -- security ------------------------------------------------------------------------------


def test_security_is_declared_on_every_protected_route_and_empty_on_public_ones(served: Served) -> None:
    doc = served.document
    schemes = doc["components"]["securitySchemes"]
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "apiKey", "in": "header", "name": "Authorization"}
    assert schemes["bearer"]["scheme"] == "bearer" and schemes["bearer"]["bearerFormat"] == "JWT"
    public = {(s.rest.method, p) for s in CATALOG.values() if s.rest and s.policy.unauthenticated for p in s.rest.paths}
    for method, path, op in _operations(doc):
        if (method, path) in public or path in ("/health", "/livez", "/readyz"):
            assert op["security"] == [], (method, path)
            assert served.http.request(method, path, headers={"Authorization": ""}).status_code != 401
        elif path == "/metrics":  # a credential only under `api.metrics: authenticated`
            assert op["security"] == [{}, *SECURITY], (method, path)
        else:
            assert op["security"] == SECURITY, (method, path)


def test_the_api_key_scheme_is_the_whole_header(served: Served) -> None:
    """`Authorization: <key>` as declared (bearer JWTs: tests/server/test_vams_replay.py signs in to the pool)."""
    assert served.http.get("/roles", headers={"Authorization": served.key}).status_code == 200
    assert served.http.get("/roles", headers={"Authorization": ""}).status_code == 401


def test_docs_page_offers_authorize_from_the_document(served: Served) -> None:
    page = served.http.get("/docs")
    assert page.status_code == 200 and "swagger-ui" in page.text and "/openapi.json" in page.text
    assert served.document["components"]["securitySchemes"]  # what Swagger UI's Authorize button lists


# -- names, operationIds, defaults -------------------------------------------------------------


def test_component_names_and_titles_are_unique(served: Served) -> None:
    schemas = served.document["components"]["schemas"]
    titles = Counter(s.get("title", name) for name, s in schemas.items())
    assert [t for t, n in titles.items() if n > 1] == []
    assert all(s.get("title", name) == name for name, s in schemas.items())


def test_operation_ids_are_sdk_method_names(served: Served) -> None:
    ids = [op["operationId"] for _, _, op in _operations(served.document)]
    assert len(ids) == len(set(ids))
    assert not [i for i in ids if re.search(r"_\d+$", i)]
    for spec in CATALOG.values():
        if spec.rest is not None:
            assert served.document["paths"][spec.rest.path][spec.rest.method.lower()]["operationId"] == spec.name


def test_declared_query_defaults_are_the_server_defaults(served: Served) -> None:
    for method, path, op in _operations(served.document):
        spec = next((s for s in CATALOG.values() if s.rest and s.rest.method == method and path in s.rest.paths), None)
        if spec is None:
            continue
        assert spec.rest is not None
        for param in op.get("parameters", []):
            if param["in"] != "query" or "default" not in param["schema"]:
                continue
            name = to_snake(param["name"])  # auth-service routes document the camelCase name
            server_default = spec.rest.defaults.get(name, spec.cls.model_fields[name].default)
            assert param["schema"]["default"] == server_default, (spec.name, name)
    long_param = next(
        p for p in served.document["paths"]["/api/v1/requests/{request_id}"]["get"]["parameters"] if p["name"] == "long"
    )
    assert long_param["schema"]["default"] is True


# -- the rules, and refusing what the document calls invalid ----------------------------------


def test_path_parameters_state_their_patterns(served: Served) -> None:
    doc = served.document
    for path in ("/auth/constraints/{constraint_id}", "/roles/{role_id}", "/api/v1/templates/{template_id}"):
        params = next(iter(doc["paths"][path].values()))["parameters"]
        schema = next(p["schema"] for p in params if p["in"] == "path")
        assert "pattern" in schema, path
        assert re.search(schema["pattern"], "has/slash") is None


def test_enums_formats_and_maxima_are_stated(served: Served) -> None:
    text = json.dumps(served.document)
    body = served.document["paths"]["/api/v1/machines"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["requested_count"]["maximum"] == 1_000_000
    assert '"enum"' in text or '"const"' in text


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/machines", {"template_id": "t1", "count": True}),
        ("/api/v1/machines", {"template_id": "t1", "count": 1, "wait": 0}),
        ("/api/v1/machines/return", {"machine_ids": "m-1"}),
    ],
)
def test_the_server_refuses_what_the_document_calls_invalid(served: Served, path: str, body: dict[str, Any]) -> None:
    answer = served.http.post(path, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error_code"] == "VALIDATION_ERROR"


# -- listing B ----------------------------------------------------------------------------------


def test_listing_b_answers_request_id_and_message(served: Served) -> None:
    template = "listing-b"
    made = served.http.post("/api/v1/templates", json={"template_id": template, "image_id": "img-1"})
    assert made.status_code == 201, made.text
    answer = served.http.post("/api/v1/machines/request", json={"templateId": template, "machineCount": 1})
    assert answer.status_code == 202, answer.text
    data = answer.json()
    assert data["requestId"].startswith("req-") and isinstance(data["message"], str)
    listing_a = served.http.post("/api/v1/machines", json={"template_id": template, "count": 1}).json()
    assert listing_a["request_id"].startswith("req-") and listing_a["status"] == "submitted"
    schema = served.document["paths"]["/api/v1/machines/request"]["post"]["responses"]["202"]
    ref = schema["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert served.document["components"]["schemas"][ref]["required"] == ["requestId", "message"]
