"""An API key sent the way generic HTTP clients send a token, `Authorization: Bearer <key>`, is the key."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server


async def test_an_api_key_given_as_a_bearer_token_authenticates(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    key = await admin_key(config)
    with running_server(config) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            plain = await http.get("/api/v1/templates", headers={"Authorization": key})
            bearer = await http.get("/api/v1/templates", headers={"Authorization": f"Bearer {key}"})
            assert plain.status_code == bearer.status_code == 200, bearer.text
            wrong = await http.get("/api/v1/templates", headers={"Authorization": f"Bearer {key[:-4]}AAAA"})
            jwt_like = await http.get("/api/v1/templates", headers={"Authorization": "Bearer eyJhbGciOi.e30.sig"})
    assert wrong.status_code == 401 and "API key is unknown" in wrong.json()["error"]
    # a token that is no key still goes to the token path (and is refused there: no identity provider here)
    assert jwt_like.status_code == 401 and "no identity provider" in jwt_like.json()["error"]
