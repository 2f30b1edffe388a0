"""The federated sign-in routes under attack, over HTTP against a real server (REST and console): malformed,
huge or hostile input is a 4xx in the one envelope (never a 500), a state never issued signs nobody in, and a
console callback without this browser's state is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.backends import base_config
from tests.support.oidc import Provider, oidc_app, openid_provider
from tests.support.remote import running_server


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with openid_provider(tmp_path_factory.mktemp("op"), {}) as op:
        yield op


@pytest.fixture
def server(provider: Provider, tmp_path: Path) -> Iterator[str]:
    with running_server(base_config(tmp_path, app=oidc_app(provider))) as url:
        yield url


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/auth/federation/finish", {"state": "s" * 43, "code": "c" * 5000}),
        ("/auth/federation/finish", {"state": "s" * 43, "samlResponse": "x" * 300_000}),
        ("/auth/federation/finish", {"state": "short", "code": "c"}),
        ("/auth/federation/finish", {"state": ["s" * 43], "code": "c"}),
        ("/auth/federation/finish", {"code": "c"}),
        ("/auth/federation/finish", {"state": "s" * 43, "code": "c", "extra": 1}),
        ("/auth/federation/start", {"redirectUri": "h" * 3000}),
        ("/auth/federation/start", {"redirectUri": 7}),
        ("/auth/federation/start", {"redirectUri": "http://attacker.example/cb"}),
        ("/auth/federation/start", {"redirectUri": "https://x.example/cb\r\nSet-Cookie: a=b"}),
    ],
)
def test_malformed_input_is_a_4xx_envelope(server: str, path: str, body: dict[str, object]) -> None:
    resp = httpx.post(f"{server}{path}", json=body, timeout=20)
    assert 400 <= resp.status_code < 500, resp.text
    envelope = resp.json()
    assert envelope["success"] is False and envelope["error_code"], envelope


def test_not_json_and_a_forged_state(server: str) -> None:
    resp = httpx.post(
        f"{server}/auth/federation/finish", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert resp.status_code == 400 and resp.json()["success"] is False
    forged = httpx.post(f"{server}/auth/federation/finish", json={"state": "A" * 43, "code": "a-code"}, timeout=20)
    assert forged.status_code == 401 and forged.json()["error_code"] == "UNAUTHENTICATED"
    assert "id_token" not in forged.text


def test_console_sso_routes_refuse_what_they_did_not_start(server: str) -> None:
    with httpx.Client(timeout=20) as browser:
        cb = browser.get(f"{server}/ui/sso/oidc/callback", params={"state": "A" * 43, "code": "x"})
        assert (
            cb.status_code == 400
            and "could not be matched" in cb.text
            and "pluginsdk_console" not in cb.headers.get("set-cookie", "")
        )
        assert browser.get(f"{server}/ui/sso/nothing").status_code == 404
        # the assertion consumer of an OIDC server: no SAML here, and never a 500
        acs = browser.post(f"{server}/ui/sso/saml/acs", data={"SAMLResponse": "x", "RelayState": "A" * 43})
        assert acs.status_code in (400, 401, 422)
        huge = browser.post(f"{server}/ui/sso/saml/acs", data={"SAMLResponse": "x" * 70_000, "RelayState": "r"})
        assert huge.status_code == 413
        assert browser.get(f"{server}/ui/sso/saml/metadata").status_code == 400
        started = browser.get(f"{server}/ui/sso/start", params={"next": "https://evil.example/"})
        assert started.status_code == 303 and started.headers["location"].startswith("http://127.0.0.1:")
        assert "evil.example" not in started.headers.get("set-cookie", "")


def test_starts_from_one_address_are_rate_limited(provider: Provider, tmp_path: Path) -> None:
    """Anonymous starts are counted per client address in the store (`api.held.creations_per_window`): past the
    rate a start is a 429 envelope with `Retry-After`, and the sign-ins begun before it are not ended."""
    config = base_config(tmp_path, app=oidc_app(provider), api={"held": {"creations_per_window": 2}})
    with running_server(config) as url:
        body = {"redirectUri": f"{url}/ui/sso/callback"}
        begun = [httpx.post(f"{url}/auth/federation/start", json=body, timeout=20) for _ in range(2)]
        assert [b.status_code for b in begun] == [200, 200], begun[-1].text
        refused = httpx.post(f"{url}/auth/federation/start", json=body, timeout=20)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error_code"] == "TOO_MANY_REQUESTS"
        console = httpx.get(f"{url}/ui/sso/start", timeout=20)  # the console's start counts with them
        assert console.status_code == 429 and int(console.headers["retry-after"]) >= 1
        kept = httpx.post(
            f"{url}/auth/federation/finish", json={"state": begun[0].json()["state"], "code": "c" * 8}, timeout=20
        )
        assert (
            kept.status_code != 429 and "unknown, used or expired" not in kept.text
        )  # still begun: the code is judged
