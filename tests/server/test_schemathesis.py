"""Property-based API test: schemathesis drives every operation of /openapi.json against a real server.

Checks: no 5xx, every response conforms to its documented schema (documented status code, body, content
type). Examples per operation are capped to keep CI fast. (`schemathesis.pytest.from_fixture` does not run
under pytest 9, so operations are iterated here with each one's hypothesis strategy.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server

MAX_EXAMPLES = 6
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]
"""The issue's bar: no 5xx, and every response (status, content type, body) is what the document says.
Positive-data acceptance is left out: cross-field rules (machine ids unless return_all) are not in JSON schema."""


def test_every_operation_conforms_to_the_openapi_document(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    key = asyncio.run(admin_key(config))
    failures: list[str] = []
    checked = 0
    with running_server(config) as url:
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        for result in schema.get_all_operations():
            operation = result.ok()
            checked += 1

            @given(case=operation.as_strategy())
            @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            def run(case: schemathesis.Case) -> None:
                case.call_and_validate(headers={"Authorization": key}, checks=CHECKS)

            try:
                run()
            except Exception as exc:  # collect every operation's failure, not only the first
                failures.append(f"{operation.label}: {str(exc)[:800]}")
    assert checked > 50
    assert not failures, "\n\n".join(failures)
