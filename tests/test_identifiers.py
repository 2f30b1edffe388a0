"""Identifiers: one documented character set per kind, the same on every operation that
takes one; control characters, bidi overrides, zero-width characters and NFKC look-alikes are refused."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from pluginsdk import PluginSDK
from pluginsdk.errors import ValidationError
from pluginsdk.models.identifiers import identifier_problem
from pluginsdk.operations import CATALOG

HOSTILE = {
    "bidi override": "ad\u202emin",
    "bidi isolate": "ad\u2066min",
    "zero-width space": "adm\u200bin",
    "zero-width joiner": "adm\u200din",
    "byte order mark": "\ufeffadmin",
    "newline": "adm\nin",
    "trailing newline": "admin\n",
    "tab": "adm\tin",
    "DEL": "adm\x7fin",
    "C1 control": "adm\x85in",
    "fullwidth look-alike": "\uff41\uff44\uff4d\uff49\uff4e",
    "ligature look-alike": "pro\ufb01le",
    "cyrillic look-alike": "\u0430dmin",
    "no-break space": "ad\u00a0min",
}

#: Field name -> identifier kind; every operation taking one of these must refuse every hostile value.
IDENTIFIER_FIELDS = {
    "template_id": "template id",
    "role_name": "role name",
    "role_id": "role name",
    "user_id": "user id",
    "username": "user id",
    "constraint_id": "constraint id",
    "api_key_name": "API key name",
}


def _operations_taking(field: str) -> list[str]:
    return sorted(name for name, spec in CATALOG.items() if field in spec.input_fields)


@pytest.mark.parametrize("field", sorted(IDENTIFIER_FIELDS))
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_operation_refuses_hostile_identifiers(field: str, case: str) -> None:
    operations = _operations_taking(field)
    assert operations, field
    value: object = HOSTILE[case]
    for name in operations:
        spec = CATALOG[name]
        given = [value] if field == "role_name" and name.endswith("user_roles") else value
        with pytest.raises(ValidationError) as exc:
            spec.build({field: given})
        fields = [e["field"].split(".")[0] for e in exc.value.details["errors"]]
        assert field in fields, (name, fields)


@pytest.mark.parametrize("field", sorted(IDENTIFIER_FIELDS))
def test_identifier_schemas_advertise_the_pattern(field: str) -> None:
    """The JSON schema (OpenAPI, MCP) says exactly what is accepted: an honest `pattern` on every such field."""
    for name in _operations_taking(field):
        prop = CATALOG[name].input_schema()["properties"][field]
        options = prop.get("anyOf", [prop])
        items = [o.get("items", o) for o in options if o.get("type") != "null"]
        assert all("pattern" in o for o in items), (name, prop)


def test_look_alikes_name_the_plain_form() -> None:
    problem = identifier_problem("template id", "\uff57\uff45\uff42")
    assert problem is not None and "'web'" in problem
    problem = identifier_problem("role name", "ad\u202emin")
    assert problem is not None and "U+202E" in problem and "\u202e" not in problem


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        (
            "template id",
            ["web", "lsf-general-4", "t3.small_v2", "A" * 255],
            ["", "-web", ".hidden", "a/b", "a b", "A" * 256],
        ),
        ("role name", ["admin", "web users", "db7.readers", "x"], ["", " admin", "admin ", "a/b", "r" * 65]),
        ("user id", ["alice", "a.b+c@example.com", "x_y-z"], ["ab", "a b", "al/ice", "u" * 257]),
        ("constraint id", ["c1", "tpl:web.readers"], ["", "a b", "c/1", "c" * 129]),
        ("API key name", ["ci", "deploy key (prod) #2", "a/b, c@d"], ["", " ci", "ci ", "a\\b", "k" * 129, "clé"]),
    ],
)
def test_documented_sets(kind: str, good: list[str], bad: list[str]) -> None:
    assert [g for g in good if identifier_problem(kind, g) is not None] == []
    assert [b for b in bad if identifier_problem(kind, b) is None] == []


async def test_hostile_identifiers_are_refused_on_both_backends(sdk: PluginSDK) -> None:
    for value in HOSTILE.values():
        with pytest.raises(ValidationError):
            await sdk.create_template(template_id=value, image_id="ami-1", provider_api="local")
        with pytest.raises(ValidationError):
            await sdk.validate_template(template_config={"templateId": value, "imageId": "ami-1"})
        with pytest.raises(ValidationError):
            await sdk.create_role(role_name=value, description="hostile role")
        with pytest.raises(ValidationError):
            await sdk.create_user_roles(user_id=value, role_name=["admin"])
        with pytest.raises(ValidationError):
            await sdk.create_user_roles(user_id="alice", role_name=[value])
        with pytest.raises(ValidationError):
            await sdk.create_api_key(api_key_name=value, description="hostile key", user_id="administrator")
        with pytest.raises(ValidationError):
            await sdk.create_constraint(
                constraint_id=value,
                name="n",
                description="hostile constraint",
                object_type="template",
                criteria_and=[{"field": "templateId", "operator": "equals", "value": "x"}],
                group_permissions=[{"groupId": "admin", "permission": "GET", "permissionType": "allow"}],
            )
        with pytest.raises(ValidationError):
            await sdk.create_constraint(
                constraint_id="c-hostile",
                name="n",
                description="hostile group",
                object_type="template",
                criteria_and=[{"field": "templateId", "operator": "equals", "value": "x"}],
                group_permissions=[{"groupId": value, "permission": "GET", "permissionType": "allow"}],
            )
    assert (await sdk.list_templates()).total_count == 0
    roles = {r.role_name for r in (await sdk.list_roles()).message.items}
    assert roles == {"admin", "basicReadOnly"}
    # the plain forms work
    await sdk.create_template(template_id="web", image_id="ami-1", provider_api="local")
    await sdk.create_role(role_name="web users", description="plain role")
    created = await sdk.create_api_key(api_key_name="deploy key (ci)", description="plain", user_id="administrator")
    assert created.api_key_name == "deploy key (ci)"


async def test_surrounding_space_of_a_key_name_is_trimmed(sdk: PluginSDK) -> None:
    created = await sdk.create_api_key(api_key_name="  ci  ", description="trimmed", user_id="administrator")
    assert created.api_key_name == "ci"


@pytest.mark.parametrize("case", ["bidi override", "zero-width space", "fullwidth look-alike", "newline"])
async def test_rest_path_identifiers_are_400_not_404(rest: httpx.AsyncClient, case: str) -> None:
    value = quote(HOSTILE[case], safe="")
    for method, path in [
        ("GET", f"/api/v1/templates/{value}"),
        ("DELETE", f"/api/v1/templates/{value}"),
        ("DELETE", f"/roles/{value}"),
        ("GET", f"/auth/constraints/{value}"),
    ]:
        r = await rest.request(method, path)
        assert r.status_code == 400, (method, path, r.text)
        assert r.json()["error_code"] == "VALIDATION_ERROR"


async def test_rest_body_identifiers_are_400(rest: httpx.AsyncClient) -> None:
    r = await rest.post("/roles", json={"roleName": "ad\u202emin", "description": "hostile role"})
    assert r.status_code == 400 and r.json()["error_code"] == "VALIDATION_ERROR", r.text
    r = await rest.post("/user-roles", json={"userId": "alice\u200b", "roleName": ["admin"]})
    assert r.status_code == 400, r.text
    r = await rest.post(
        "/auth/api-keys", json={"apiKeyName": "k\u2067", "description": "hostile key", "userId": "administrator"}
    )
    assert r.status_code == 400, r.text
    listing = await rest.get("/roles")
    assert listing.status_code == 200
