"""OIDC sign-in through a second OpenID provider implementation: PyPI's `oidc-provider-mock` (Authlib-based) on
loopback, on both backends.

Another server's reading of the protocol than panva's: its one-key key set (whose ID tokens may name no `kid`,
as OpenID Connect Core 10.1 and RFC 7515 allow; tests/auth/federation/test_external_oauth.py checks that case
key by key), its consent page, its token endpoint (any client id and secret accepted).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

from pluginsdk import PermissionDeniedError
from tests.auth.conftest import authenticate, call_as
from tests.support.backends import BACKENDS, base_config, open_sdk_on
from tests.support.oidc import CHEAP_HASHING, CLIENT_ID, CLIENT_SECRET

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # the provider's own use of authlib.jose
    oidc_provider_mock = pytest.importorskip("oidc_provider_mock")

pytestmark = pytest.mark.filterwarnings("ignore:get_jwt_config:DeprecationWarning")
"""The provider's Authlib grant (not ours) uses a deprecated hook; its token endpoint would answer 500."""

REDIRECT = "http://127.0.0.1:9/callback"
"""Never requested: the provider's redirect to it is where the played browser stops."""


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    users = [
        oidc_provider_mock.User(sub="alice", claims={"email": "alice@example.com", "groups": ["platform"]}),
        oidc_provider_mock.User(sub="bob", claims={"email": "bob@elsewhere.test", "groups": ["engineers"]}),
    ]
    with oidc_provider_mock.run_server_in_thread(user_claims=users) as server:
        yield f"http://127.0.0.1:{server.server_port}"


def mock_app(issuer: str, **federation: object) -> dict[str, object]:
    idp = {
        "issuer": issuer,
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "discoveryEndpoint": f"{issuer}/.well-known/openid-configuration",
        "scope": "openid email",
        "displayName": "Mock IdP",
        "jwksMinRefreshSeconds": 0,
    }
    return {
        "authProvider": {
            "useManaged": {"enabled": True, "useOidc": True, "passwordHashing": CHEAP_HASHING},
            "useExternalOAuthIdp": idp,
            "federation": {"roleMapping": {"platform": ["admin"], "engineers": ["basicReadOnly"]}, **federation},
            "authorizerOptions": {"defaultUserRoleName": None},
        }
    }


def choose_user(url: str, sub: str) -> dict[str, str]:
    """The provider's authorization page, answered by choosing `sub`: the query it sends to REDIRECT."""
    with httpx.Client(follow_redirects=False, timeout=20) as client:
        page = client.get(url)
        assert page.status_code == 200, page.text[:2000]
        answer = client.post(url, data={"sub": sub})
        assert answer.is_redirect, (answer.status_code, answer.text[:2000])
        target = urljoin(url, answer.headers["location"])
    assert target.startswith(REDIRECT)
    return {k: v[-1] for k, v in parse_qs(urlsplit(target).query).items()}


@pytest.mark.parametrize("kind", BACKENDS)
async def test_sign_in_through_oidc_provider_mock(kind: str, issuer: str, tmp_path: Path) -> None:
    async with open_sdk_on(kind, base_config(tmp_path, app=mock_app(issuer)), tmp_path) as sdk:
        begun = await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
        answer = await asyncio.to_thread(choose_user, begun.redirect_url, "alice")
        tokens = await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
        assert tokens.id_token
        if kind == "local":
            p = await authenticate(sdk, f"Bearer {tokens.id_token}")
            assert p.user_id == "alice" and p.email == "alice@example.com"
            assert (await call_as(sdk, p, "list_roles")).message.items  # groups -> admin
        listing = await sdk.list_user_roles()
        assert {r for a in listing.message.items if a.user_id == "alice" for r in a.role_name} == {"admin"}


async def test_a_domain_refusal_through_oidc_provider_mock(issuer: str, tmp_path: Path) -> None:
    app = mock_app(issuer, allowedEmailDomains=["example.com"])
    async with open_sdk_on("local", base_config(tmp_path, app=app), tmp_path) as sdk:
        begun = await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
        answer = await asyncio.to_thread(choose_user, begun.redirect_url, "bob")
        with pytest.raises(PermissionDeniedError, match="e-mail domain"):
            await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
