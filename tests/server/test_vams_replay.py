"""The VAMS 2.5 web client's auth pages, replayed against a real server in the order the pages call.

Facts about that client (public repository awslabs/visual-asset-management-system, read, not copied):
relative paths joined to the API base, `Authorization: Bearer <token>` from the user pool, JSON bodies; a
call has failed when the answer's `message` is missing or says `error`; the role form always sends
`id: ""` and `sourceIdentifier`; the constraint form sends `constraintId`, `appliesTo`, an `id` on each
criterion and group permission, and empty `criteriaOr` / `userPermissions`; editing a constraint re-POSTs
the listed record; the API-key edit form sends `expiresAt: ""` to clear the expiry; the key list page reads
top-level `Items` and breaks if `message` is present and not a string; user pages call `/user/cognito`.
Each step asserts the fields the page reads from the answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk import PluginSDK
from tests.auth.conftest import Mailbox, managed_app
from tests.support.backends import base_config
from tests.support.remote import running_server

PASSWORD = "Correct-Horse-9-Battery"


class WebClient:
    """What the web client's API helper does: base URL + relative path, bearer token, JSON."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> dict[str, Any]:
        response = self.http.request(method, path, json=body)
        assert response.status_code == status, (method, path, response.status_code, response.text)
        data = response.json()
        assert isinstance(data, dict)
        return data

    def ok(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """A call the client counts as succeeded: 2xx and `message` present without `error` in it."""
        response = self.http.request(method, path, json=body)
        assert response.status_code < 300, (method, path, response.status_code, response.text)
        data = response.json()
        assert "message" in data, (path, data)
        assert "error" not in str(data["message"]).lower(), (path, data)
        return dict(data)


@pytest.fixture
def client(tmp_path: Path, mailbox: Mailbox) -> Iterator[WebClient]:
    import asyncio

    config = base_config(tmp_path, app=managed_app(mailbox))

    async def sign_in() -> str:
        async with PluginSDK(config=config) as sdk:
            await sdk.create_managed_user(user_id="vams-admin", email="vams-admin@example.com")
            await sdk.create_user_roles("vams-admin", ["admin"])
            tokens = await sdk.login("vams-admin", mailbox.temporary_password(), new_password=PASSWORD)
            assert tokens.id_token
            return str(tokens.id_token)

    token = asyncio.run(sign_in())
    with running_server(config) as url:
        web = WebClient(url, token)
        yield web
        web.http.close()


def test_auth_pages_in_order(client: WebClient) -> None:
    # The navigation asks which web routes the signed-in user may open.
    routes = client.call(
        "POST",
        "/auth/routes",
        {
            "routes": [
                {"method": "GET", "route__path": "/auth/roles"},
                {"method": "GET", "route__path": "/auth/apikeys"},
            ]
        },
    )
    assert {r["route__path"] for r in routes["allowedRoutes"]} == {"/auth/roles", "/auth/apikeys"}

    # Roles page: list, create with the form body, edit with the form body.
    roles = client.ok("GET", "/roles")
    assert any(r["roleName"] == "admin" for r in roles["message"]["Items"])
    form = {
        "source": "INTERNAL_SYSTEM",
        "description": "Editors of the VAMS replay",
        "id": "",
        "roleName": "vams-editors",
        "sourceIdentifier": "",
        "mfaRequired": False,
    }
    created = client.ok("POST", "/roles", form)
    assert created["roleName"] == "vams-editors" and created["operation"] == "create"
    client.ok("PUT", "/roles", {**form, "description": "Editors, edited"})
    listed = {r["roleName"]: r for r in client.ok("GET", "/roles")["message"]["Items"]}
    assert listed["vams-editors"]["description"] == "Editors, edited"
    for column in ("roleName", "description", "createdOn", "source"):  # the roles table
        assert isinstance(listed["vams-editors"][column], str), column
    assert listed["vams-editors"]["mfaRequired"] is False

    # User roles page.
    assert isinstance(client.ok("GET", "/user-roles")["message"]["Items"], list)
    client.ok("POST", "/user-roles", {"userId": "vams-admin", "roleName": ["vams-editors"]})
    client.ok("PUT", "/user-roles", {"userId": "vams-admin", "roleName": ["admin", "vams-editors"]})
    assigned = {a["userId"]: a for a in client.ok("GET", "/user-roles")["message"]["Items"]}
    assert set(assigned["vams-admin"]["roleName"]) == {"admin", "vams-editors"}
    client.ok("POST", "/user-roles", {"userId": "vams-viewer", "roleName": ["vams-editors"]})
    client.ok("DELETE", "/user-roles", {"userId": "vams-viewer"})  # the client sends DELETE with a body
    assert all(a["userId"] != "vams-viewer" for a in client.ok("GET", "/user-roles")["message"]["Items"])

    # Constraints page: create with the form state, list, edit by re-POSTing the listed record, delete.
    constraint_id = str(uuid.uuid4())
    constraint_form = {
        "constraintId": constraint_id,
        "name": "vams-replay",
        "description": "Editors may read every asset",
        "appliesTo": [],
        "objectType": "asset",
        "criteriaAnd": [{"id": "cabc123xyz", "field": "assetName", "operator": "contains", "value": "demo"}],
        "criteriaOr": [],
        "groupPermissions": [{"id": "g1", "groupId": "vams-editors", "permission": "GET", "permissionType": "allow"}],
        "userPermissions": [],
    }
    written = client.ok("POST", f"/auth/constraints/{constraint_id}", constraint_form)
    assert written["constraintId"] == constraint_id and written["operation"] == "create"
    page = client.ok("GET", "/auth/constraints")["message"]
    record = next(c for c in page["Items"] if c["constraintId"] == constraint_id)
    edited = {**record, "description": "Editors may read demo assets", "appliesTo": []}
    for criterion in edited["criteriaAnd"]:
        criterion["id"] = "c" + uuid.uuid4().hex[:9]  # the form gives listed criteria ids again
    rewritten = client.ok("POST", f"/auth/constraints/{constraint_id}", edited)
    assert rewritten["operation"] == "update"
    page = client.ok("GET", "/auth/constraints")["message"]
    record = next(c for c in page["Items"] if c["constraintId"] == constraint_id)
    assert record["description"] == "Editors may read demo assets"
    client.ok("DELETE", f"/auth/constraints/{constraint_id}")
    assert all(c["constraintId"] != constraint_id for c in client.ok("GET", "/auth/constraints")["message"]["Items"])

    # API keys page: create, list (top-level Items; message absent or a string), clear the expiry, delete.
    key = client.call(
        "POST",
        "/auth/api-keys",
        {
            "apiKeyName": "vams-replay",
            "description": "key of the replay",
            "userId": "vams-admin",
            "expiresAt": "2099-01-01",
        },
    )
    key_id = key["apiKeyId"]
    assert key["apiKey"]
    keys = client.call("GET", "/auth/api-keys")
    assert isinstance(keys.get("message", ""), str)
    listed_key = next(k for k in keys["Items"] if k["apiKeyId"] == key_id)
    assert listed_key["apiKeyName"] == "vams-replay" and listed_key["expiresAt"]
    for column in ("apiKeyId", "apiKeyName", "description", "userId", "createdBy", "createdAt"):  # table columns
        assert isinstance(listed_key[column], str) and listed_key[column], column
    assert listed_key["isActive"] == "true"  # the page compares with the text "true"
    assert "apiKey" not in listed_key
    client.call(
        "PUT", f"/auth/api-keys/{key_id}", {"description": "key of the replay", "expiresAt": "", "isActive": "true"}
    )
    keys = client.call("GET", "/auth/api-keys")
    assert isinstance(keys.get("message", ""), str)
    assert next(k for k in keys["Items"] if k["apiKeyId"] == key_id).get("expiresAt") in (None, "")
    client.call("DELETE", f"/auth/api-keys/{key_id}")

    # Users page: the client's /user/cognito paths.
    users = client.call("GET", "/user/cognito")
    assert any(u["userId"] == "vams-admin" for u in users["users"])
    client.call("POST", "/user/cognito", {"userId": "vams-guest", "email": "vams-guest@example.com"})
    assert any(u["userId"] == "vams-guest" for u in client.call("GET", "/user/cognito")["users"])
    client.call("DELETE", "/user/cognito/vams-guest")
    assert all(u["userId"] != "vams-guest" for u in client.call("GET", "/user/managed")["users"])

    # Roles page: delete the role the replay made.
    client.call("PUT", "/user-roles", {"userId": "vams-admin", "roleName": ["admin"]})
    client.ok("DELETE", "/roles/vams-editors")


def test_unknown_fields_beyond_the_named_ones_stay_errors(client: WebClient) -> None:
    form = {"description": "A role with a typo", "roleName": "typo-role", "id": "", "sourceIdentifer": ""}
    answer = client.call("POST", "/roles", form, status=400)
    assert "sourceIdentifer" in str(answer)
    constraint = {
        "name": "x",
        "description": "unknown top-level field",
        "objectType": "asset",
        "groupPermissions": [{"groupId": "admin", "permission": "GET", "permissionType": "allow"}],
        "criteriaAnd": [{"field": "assetName", "operator": "contains", "value": "x"}],
        "appliesTo": [],
        "colour": "red",
    }
    client.call("POST", "/auth/constraints/typo-1", constraint, status=400)
    del constraint["colour"]
    constraint["criteriaAnd"] = [{"id": "c1", "field": "assetName", "operator": "contains", "value": "x", "note": "?"}]
    nested = client.call("POST", "/auth/constraints/typo-1", constraint, status=400)
    assert "note" in nested["error"]
    constraint["criteriaAnd"][0].pop("note")
    client.ok("POST", "/auth/constraints/typo-1", constraint)  # the row `id` alone is ignored by name


def test_self_service_key_expiry_still_cannot_be_cleared(client: WebClient) -> None:
    expires = (datetime.now(UTC) + timedelta(days=30)).date().isoformat()
    key = client.call(
        "POST", "/auth/user/api-keys", {"apiKeyName": "mine", "description": "my own key", "expiresAt": expires}
    )
    client.call("PUT", f"/auth/user/api-keys/{key['apiKeyId']}", {"expiresAt": ""}, status=400)


def _api_key(client: WebClient, user_id: str) -> str:
    made = client.call(
        "POST",
        "/auth/api-keys",
        {"apiKeyName": f"key-{user_id}", "description": "replay helper key", "userId": user_id},
    )
    return str(made["apiKey"])


_BODY = {
    "name": "re-post",
    "description": "Readers of demo assets",
    "objectType": "asset",
    "criteriaAnd": [{"field": "assetName", "operator": "contains", "value": "demo"}],
    "groupPermissions": [{"groupId": "admin", "permission": "GET", "permissionType": "allow"}],
}


def test_re_post_replaces_only_for_callers_who_may_put(client: WebClient) -> None:
    client.ok("POST", "/roles", {"roleName": "creators", "description": "may create constraints only"})
    client.ok(
        "POST",
        "/auth/constraints/creators-api",
        {
            "name": "creators-api",
            "description": "creators may POST constraints",
            "objectType": "api",
            "criteriaOr": [{"field": "route__path", "operator": "starts_with", "value": "/auth/constraints"}],
            "groupPermissions": [{"groupId": "creators", "permission": "POST", "permissionType": "allow"}],
        },
    )
    client.ok("POST", "/user-roles", {"userId": "creator", "roleName": ["creators"]})
    limited = httpx.Client(base_url=client.url, headers={"Authorization": _api_key(client, "creator")}, timeout=30)
    try:
        first = limited.post("/auth/constraints/by-creator", json=_BODY)
        assert first.status_code == 200 and first.json()["operation"] == "create", first.text
        again = limited.post("/auth/constraints/by-creator", json={**_BODY, "description": "changed by a creator"})
        assert again.status_code == 403, again.text
        explicit = limited.post("/auth/constraints/by-creator", json={**_BODY, "replaceExisting": False})
        assert explicit.status_code == 409, explicit.text
    finally:
        limited.close()
    stored = client.call("GET", "/auth/constraints/by-creator")
    assert stored["description"] == "Readers of demo assets"
    mismatch = client.call("POST", "/auth/constraints/by-creator", {**_BODY, "constraintId": "other-id"}, status=400)
    assert mismatch["error_code"] == "VALIDATION_ERROR"


def test_sdk_create_constraint_stays_409_over_rest(client: WebClient) -> None:
    import asyncio

    from pluginsdk import AlreadyExistsError

    key = _api_key(client, "vams-admin")

    async def twice() -> None:
        async with PluginSDK(backend="remote", api_url=client.url, api_key=key) as sdk:
            body = {k: v for k, v in _BODY.items() if k != "objectType"}
            await sdk.create_constraint("sdk-made", object_type="asset", **body)
            with pytest.raises(AlreadyExistsError):
                await sdk.create_constraint("sdk-made", object_type="asset", **body)
            replaced = await sdk.create_constraint(
                "sdk-made", object_type="asset", replace_existing=True, **{**body, "description": "replaced on purpose"}
            )
            assert replaced.operation == "update"

    asyncio.run(twice())
