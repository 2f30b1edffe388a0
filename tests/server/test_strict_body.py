"""The strict body check reads the parsed body where strict Python validation is strict JSON validation.

For every catalog route with a body, each body field given each JSON type (and a well-typed value from the
document's example shapes) is accepted or refused alike by the check on the parsed body and by the check on
the raw bytes; routes whose fields JSON spells as strings or arrays (enums, dates, tuples) keep the raw check.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from pydantic.alias_generators import to_camel

from pluginsdk.operations import CATALOG
from pluginsdk.server._strict import _checker, _strict_class, check_body, strict_operation
from pluginsdk.server._wire import parse_json

SAMPLES: list[Any] = [None, True, 0, 1, -3, 1.5, "", "x", "GET", [], ["x"], [1], [{}], {}, {"a": 1}, {"a": [True]}]
BODY_ROUTES = [spec for spec in CATALOG.values() if spec.rest is not None and spec.body_fields]


def _accepts(check: Any) -> bool:
    try:
        check()
    except pydantic.ValidationError:
        return False
    return True


@pytest.mark.parametrize("spec", BODY_ROUTES, ids=[s.name for s in BODY_ROUTES])
def test_parsed_and_raw_checks_agree(spec: Any) -> None:
    adapter, parsed = _checker(spec)
    if not parsed:
        return
    assert spec.rest is not None
    names = [None] if spec.rest.body_field is not None else list(spec.body_fields)
    for name in names:
        for value in SAMPLES:
            raw = json.dumps(value if name is None else {name: value}).encode()
            body = parse_json(raw)
            by_python = _accepts(lambda body=body: adapter.validate_python(body, strict=True))
            by_json = _accepts(lambda raw=raw: adapter.validate_json(raw, strict=True))
            assert by_python == by_json, (spec.name, name, value)


def test_the_batch_body_is_checked_as_parsed_and_an_enum_body_on_its_bytes() -> None:
    parsed = {spec.name: _checker(spec)[1] for spec in BODY_ROUTES}
    assert parsed["check_access_batch"] and parsed["check_access"]
    assert not all(parsed.values())  # some routes keep the JSON-mode check (a type JSON spells as a string)


def _outcome(build: Any) -> tuple[str, Any]:
    from pluginsdk.errors import ValidationError

    try:
        return "ok", build().model_dump(mode="json")
    except ValidationError as err:
        return "refused", err.to_envelope()  # the same error, its field named as the body spells it


ONE_PASS = [spec for spec in BODY_ROUTES if _strict_class(spec) is not None]
VALID = {
    "check_access_batch": {
        "questions": [{"userId": "u-1", "mfa": False, "objectType": "asset", "attributes": {"a": 1}, "method": "GET"}],
        "explain": True,
    },
    "check_access": {"roles": ["editor"], "mfa": True, "objectType": "asset", "method": "PUT", "attributes": {}},
}


@pytest.mark.parametrize("spec", ONE_PASS, ids=[s.name for s in ONE_PASS])
def test_one_strict_pass_is_the_check_then_the_build(spec: Any) -> None:
    """Accepted or refused alike, the same operation when accepted and the same error when refused, as the
    strict check then the build."""
    bodies = [{key: value} for name in spec.body_fields for key in (name, to_camel(name)) for value in SAMPLES]
    base = VALID.get(spec.name, {})
    bodies += [base, *({**base, name: value} for name in spec.body_fields for value in SAMPLES)]
    for body in bodies:
        raw = json.dumps(body).encode()

        def two_passes(body: dict[str, Any] = body, raw: bytes = raw) -> Any:
            check_body(spec, raw, body)
            return spec.build(body)

        one = _outcome(lambda body=body: strict_operation(spec, body) or two_passes())  # as the door does
        assert one == _outcome(two_passes), (spec.name, body)


def test_the_batch_is_built_in_one_pass_unless_a_list_field_holds_a_string() -> None:
    spec = CATALOG["check_access"]
    assert type(strict_operation(spec, VALID["check_access"])) is spec.cls  # the handler's class
    assert strict_operation(spec, {**VALID["check_access"], "roles": "editor"}) is None  # the check refuses it
    assert _strict_class(CATALOG["check_access_batch"]) is not None
