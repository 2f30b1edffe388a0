"""Errors stay small and clean: `details.value` and messages are clipped, a secret-named
field's value is never echoed, and every error renders as JSON whatever the input was."""

from __future__ import annotations

import json

import httpx
import pytest

from pluginsdk import PluginSDK
from pluginsdk.errors import (
    MAX_DETAIL_CHARS,
    MAX_MESSAGE_CHARS,
    NotFoundError,
    SDKError,
    ValidationError,
    error_from_envelope,
    is_secret_field,
)

HUGE = "x" * 10_000_000


def _rendered(err: SDKError) -> bytes:
    """The envelope as the server writes it (strict JSON, UTF-8)."""
    return json.dumps(err.to_envelope(), allow_nan=False, ensure_ascii=False).encode("utf-8")


async def test_a_huge_unknown_field_gives_a_small_error(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.list_templates(bogus=HUGE)
    assert len(_rendered(exc.value)) < 4000
    assert exc.value.details["value"] is None  # an unknown field's value is never echoed
    with pytest.raises(ValidationError) as exc:
        await sdk.list_templates(**{HUGE: 1})
    assert len(_rendered(exc.value)) < 4000


async def test_a_huge_value_is_clipped(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_template(template_id=HUGE, image_id="ami-1")
    rendered = _rendered(exc.value)
    assert len(rendered) < 4000
    value = exc.value.details["value"]
    assert isinstance(value, str) and value.startswith("xxx") and len(value) < MAX_DETAIL_CHARS + 50
    assert len(exc.value.message) <= MAX_MESSAGE_CHARS + 50


async def test_many_errors_are_capped(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_user_roles(user_id="alice", role_name=[f"bad/{i}" for i in range(100)])
    assert len(_rendered(exc.value)) < 20_000


@pytest.mark.parametrize(
    ("operation", "params", "field"),
    [
        ("change_password", {"previous_password": 918273645, "proposed_password": "x"}, "previous_password"),
        ("change_password", {"previous_password": "p", "proposed_password": ["918273645"]}, "proposed_password"),
        ("login", {"username": "alice", "password": 918273645}, "password"),
        ("refresh_tokens", {"refresh_token": "918273645" * 100}, "refresh_token"),
        ("verify_mfa", {"code": "918273645"}, "code"),
        ("login", {"username": "alice", "password": "p", "totp_code": "918273645"}, "totp_code"),
        ("login", {"username": "alice", "password": "p", "pasword": "918273645"}, "pasword"),
    ],
)
async def test_secret_values_are_never_echoed(
    sdk: PluginSDK, operation: str, params: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as exc:
        await getattr(sdk, operation)(**params)
    assert exc.value.details["field"] == field
    assert b"918273645" not in _rendered(exc.value)
    assert "918273645" not in str(exc.value) and "918273645" not in repr(exc.value)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("new_password", True),
        ("previousPassword", True),
        ("client_secret", True),
        ("refresh_token", True),
        ("api_key", True),
        ("apiKey", True),
        ("x-api-key", True),
        ("totp_code", True),
        ("code", True),
        ("otp", True),
        ("private_key", True),
        ("routes[3].password", True),
        ("proposed_password.0", True),
        ("secrets[2]", True),
        ("items.3.name", False),
        ("api_key_id", False),
        ("api_key_name", False),
        ("key_name", False),
        ("token_use", False),
        ("template_id", False),
        ("description", False),
        ("limit", False),
        (None, False),
    ],
)
def test_secret_field_names(name: str | None, secret: bool) -> None:
    assert is_secret_field(name) is secret


def test_details_are_cleaned_wherever_the_error_comes_from() -> None:
    err = ValidationError(
        "m" * 100_000 + "\ud800",
        details={
            "field": "password",
            "value": "hunter2",
            "expected": ["a"] * 1000,
            "nan": float("nan"),
            "big": 10**5000,
            "nested": {"deep": {"deeper": {"deepest": {"x": {"y": 1}}}}},
        },
    )
    body = json.loads(_rendered(err))
    assert body["details"]["value"] == "***"
    assert len(body["details"]["expected"]) <= 51
    assert body["details"]["nan"] == "nan" and "bits" in body["details"]["big"]
    assert len(body["error"]) < MAX_MESSAGE_CHARS + 50 and "\\ud800" not in body["error"][:-60]
    rebuilt = error_from_envelope({**body, "details": {"field": "token", "value": "s3cr3t"}}, 400)
    assert rebuilt.details["value"] == "***"
    missing = NotFoundError("template", "t" * 5000)
    assert len(_rendered(missing)) < 3000


async def test_odd_values_in_errors_render_as_json(sdk: PluginSDK) -> None:
    for call in (
        sdk.list_templates(limit=float("nan")),
        sdk.list_templates(limit=10**5000),
        sdk.get_template(template_id="\ud800"),
        sdk.get_template(template_id="a\x00b"),
    ):
        with pytest.raises(ValidationError) as exc:
            await call
        _rendered(exc.value)


# -- REST --------------------------------------------------------------------------------------------------
async def test_rest_errors_are_small_and_secret_free(rest: httpx.AsyncClient) -> None:
    big = "y" * 900_000  # under the body limit
    r = await rest.post("/api/v1/templates", json={"template_id": "t", "image_id": "ami-1", "bogus": big})
    assert r.status_code == 400 and len(r.content) < 4000, len(r.content)
    r = await rest.post("/api/v1/templates", json={"template_id": "t", "image_id": "ami-1", big: 1})
    assert r.status_code == 400 and len(r.content) < 4000, len(r.content)
    r = await rest.post("/api/v1/templates", json={"template_id": big, "image_id": "ami-1"})
    assert r.status_code == 400 and len(r.content) < 4000, len(r.content)
    r = await rest.post("/auth/user/password", json={"previousPassword": 918273645, "proposedPassword": "x"})
    assert r.status_code == 400 and b"918273645" not in r.content, r.text
    r = await rest.post(
        "/auth/user/password", json={"previousPassword": "a", "proposedPassword": "b", "pasword": "918273645"}
    )
    assert r.status_code == 400 and b"918273645" not in r.content, r.text
    r = await rest.get("/api/v1/templates/" + "z" * 4000)
    assert r.status_code in (400, 404) and len(r.content) < 4000


async def test_invisible_and_terminal_characters_are_shown_escaped(sdk: PluginSDK) -> None:
    """An error quoting input can neither recolour a terminal (ANSI), reorder (bidi) nor hide (zero-width) text."""
    with pytest.raises(ValidationError) as exc:
        await sdk.create_constraint(
            constraint_id="c1",
            name="n",
            description="escapes in errors",
            object_type="template",
            criteria_and=[{"field": "templateId", "operator": "\x1b[2Jequals\u202e", "value": "x"}],
            group_permissions=[{"groupId": "admin", "permission": "GET", "permissionType": "allow"}],
        )
    rendered = _rendered(exc.value).decode("utf-8")
    assert "\x1b" not in rendered and "\u202e" not in rendered
    assert "\\u001b" in exc.value.message and "\\u202e" in exc.value.details["value"]
