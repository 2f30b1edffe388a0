"""OIDC sign-in against a real OpenID provider on loopback (panva's oidc-provider), on both backends.

The browser is played with httpx through the provider's own login and consent pages; the code comes back to
a loopback redirect URI. Groups become roles at each sign-in; the user is made on first sign-in; a state
used twice or never issued, a token of another issuer, a wrong nonce, an expired ID token are refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from pluginsdk import AuthenticationError, PermissionDeniedError, PluginSDK
from pluginsdk.models.auth_results import SessionTokens
from tests.auth.conftest import authenticate, call_as
from tests.support.backends import BACKENDS, base_config, open_sdk_on
from tests.support.oidc import Provider, TamperingTokenEndpoint, now, oidc_app, openid_provider, play_browser

REDIRECT = "http://127.0.0.1:9/callback"
"""Never requested: the provider's redirect to it is where the played browser stops."""
ACCOUNTS = {
    "alice": {"email": "alice@example.com", "email_verified": True, "groups": ["engineers"]},
    "pat": {"email": "pat@example.com", "email_verified": True, "groups": ["platform", "unmapped"]},
    "mallory": {"email": "mallory@elsewhere.test", "email_verified": True, "groups": ["platform"]},
    "operator": {"email": "operator@example.com", "email_verified": True, "groups": ["platform"]},
    "administrator": {"email": "admin@example.com", "email_verified": True, "groups": ["engineers"]},
    "keyholder": {"email": "keys@example.com", "email_verified": True, "groups": []},
}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with openid_provider(tmp_path_factory.mktemp("op"), ACCOUNTS) as op:
        yield op


@asynccontextmanager
async def federated(kind: str, provider: Provider, tmp_path: Path, **extra: Any) -> AsyncIterator[PluginSDK]:
    async with open_sdk_on(kind, base_config(tmp_path, app=oidc_app(provider, **extra)), tmp_path) as sdk:
        yield sdk


async def sign_in(sdk: PluginSDK, login: str) -> SessionTokens:
    begun = await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
    answer = await asyncio.to_thread(play_browser, begun.redirect_url, REDIRECT, login)
    assert answer["state"] == begun.state
    tokens: SessionTokens = await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
    return tokens


async def as_token(sdk: PluginSDK, token: str, name: str) -> Any:
    """Operation `name` called with `Bearer token`, as the server takes it (remote: over HTTP)."""
    if sdk.backend.name == "local":
        return await call_as(sdk, await authenticate(sdk, f"Bearer {token}"), name)
    async with PluginSDK(backend="remote", api_url=sdk.settings.api.url, api_key=f"Bearer {token}") as other:
        return await other.call(name)


async def managed_user(sdk: PluginSDK, user_id: str) -> Any:
    listing = await sdk.list_managed_users()
    return next((u for u in listing.users if u.user_id == user_id), None)


async def roles(sdk: PluginSDK, user_id: str) -> set[str]:
    listing = await sdk.list_user_roles()
    return {r for a in listing.message.items if a.user_id == user_id for r in a.role_name}


@pytest.mark.parametrize("kind", BACKENDS)
async def test_sign_in_makes_the_user_and_maps_groups_to_roles(kind: str, provider: Provider, tmp_path: Path) -> None:
    async with federated(kind, provider, tmp_path) as sdk:
        options = await sdk.get_sign_in_options()
        assert options.federation == "oidc" and options.display_name == "Test IdP"
        assert options.end_session_url and options.end_session_url.startswith(provider.issuer)
        tokens = await sign_in(sdk, "alice")
        assert tokens.id_token and tokens.refresh_token and tokens.expires_in
        assert await roles(sdk, "alice") == {"basicReadOnly"}
        user = await managed_user(sdk, "alice")
        assert user is not None
        assert user.email == "alice@example.com" and user.user_status == "FEDERATED"
        assert (await as_token(sdk, tokens.id_token, "list_templates")).templates == []
        with pytest.raises(PermissionDeniedError):
            await as_token(sdk, tokens.id_token, "list_roles")
        # roles are the groups' at each sign-in: a hand-given role goes, an unmapped group gives nothing
        await sdk.create_user_roles("alice", ["admin"])
        await sign_in(sdk, "alice")
        assert await roles(sdk, "alice") == {"basicReadOnly"}
        pat = await sign_in(sdk, "pat")
        assert await roles(sdk, "pat") == {"admin"}
        assert (await as_token(sdk, pat.id_token or "", "list_roles")).message.items
        # sign-out ends the session: its token stops working
        await as_token(sdk, pat.id_token or "", "logout")
        with pytest.raises(AuthenticationError):
            await as_token(sdk, pat.id_token or "", "list_templates")


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_state_is_good_once_and_only_as_issued(kind: str, provider: Provider, tmp_path: Path) -> None:
    async with federated(kind, provider, tmp_path) as sdk:
        begun = await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
        answer = await asyncio.to_thread(play_browser, begun.redirect_url, REDIRECT, "alice")
        tampered = begun.state[:-4] + ("AAAA" if not begun.state.endswith("AAAA") else "BBBB")
        with pytest.raises(AuthenticationError, match="unknown, used or expired"):
            await sdk.finish_federated_sign_in(state=tampered, code=answer["code"])
        await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
        with pytest.raises(AuthenticationError, match="unknown, used or expired"):  # replayed
            await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
        # a code sent back for another sign-in (another PKCE verifier) is refused by the provider
        other = await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
        second = await asyncio.to_thread(
            play_browser, begun.redirect_url.replace(begun.state, other.state), REDIRECT, "alice"
        )
        mine = await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
        with pytest.raises(AuthenticationError):
            await sdk.finish_federated_sign_in(state=mine.state, code=second["code"])


@pytest.mark.parametrize("kind", BACKENDS)
async def test_redirect_uri_must_be_https_or_loopback(kind: str, provider: Provider, tmp_path: Path) -> None:
    from pluginsdk import ValidationError

    async with federated(kind, provider, tmp_path) as sdk:
        for bad in ("http://attacker.example/callback", "javascript:alert(1)", "http://127.0.0.1:9/cb#frag", ""):
            with pytest.raises(ValidationError):
                await sdk.start_federated_sign_in(redirect_uri=bad)


def _other_issuer(claims: dict[str, Any]) -> dict[str, Any]:
    return {**claims, "iss": "http://127.0.0.1:1"}


def _wrong_nonce(claims: dict[str, Any]) -> dict[str, Any]:
    return {**claims, "nonce": "not-the-nonce-of-this-sign-in"}


def _expired(claims: dict[str, Any]) -> dict[str, Any]:
    return {**claims, "iat": now() - 7200, "exp": now() - 3600}  # an hour past, well beyond the clock skew


def _skewed(claims: dict[str, Any]) -> dict[str, Any]:
    return {**claims, "iat": now() + 30}  # a provider clock 30 s ahead: within clockSkewSeconds


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("tamper", [_other_issuer, _wrong_nonce, _expired, None])
async def test_forged_or_stale_id_tokens_are_refused(
    kind: str, tamper: Callable[[dict[str, Any]], dict[str, Any]] | None, provider: Provider, tmp_path: Path
) -> None:
    endpoint = TamperingTokenEndpoint(provider)
    endpoint.tamper = tamper
    if tamper is None:  # the right claims, signed by a key the provider never published
        endpoint.tamper = _skewed
        endpoint.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    try:
        async with federated(kind, provider, tmp_path, token_endpoint=endpoint.url) as sdk:
            with pytest.raises(AuthenticationError):
                await sign_in(sdk, "alice")
            assert await roles(sdk, "alice") == set()
            endpoint.tamper, endpoint.key = _skewed, None  # the proxy itself is sound: a sound token passes
            assert (await sign_in(sdk, "alice")).id_token
    finally:
        endpoint.close()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_allow_lists_and_a_password_user_are_not_signed_in(kind: str, provider: Provider, tmp_path: Path) -> None:
    async with federated(kind, provider, tmp_path, allowedEmailDomains=["example.com"]) as sdk:
        with pytest.raises(PermissionDeniedError, match="e-mail domain"):
            await sign_in(sdk, "mallory")
        assert await managed_user(sdk, "mallory") is None  # refused before any user was made
        await sdk.create_managed_user(user_id="operator", email="operator@example.com")
        with pytest.raises(PermissionDeniedError, match="does not sign in"):
            await sign_in(sdk, "operator")
        assert await roles(sdk, "operator") == set()
        # nor does it take over an id in use here: the administrator's, or one that holds an API key
        with pytest.raises(PermissionDeniedError, match="in use here"):
            await sign_in(sdk, "administrator")
        assert "admin" in await roles(sdk, "administrator")
        await sdk.create_user_roles("keyholder", ["basicReadOnly"])
        await sdk.create_api_key(api_key_name="k", description="a key of keyholder", user_id="keyholder")
        await sdk.delete_user_roles("keyholder")
        with pytest.raises(PermissionDeniedError, match="in use here"):
            await sign_in(sdk, "keyholder")
    async with federated(kind, provider, tmp_path / "b", allowedIssuers=["https://idp.example.test"]) as sdk:
        with pytest.raises(PermissionDeniedError):
            await sign_in(sdk, "alice")


@pytest.mark.parametrize("kind", BACKENDS)
async def test_without_federation_the_operations_say_so(kind: str, tmp_path: Path) -> None:
    from pluginsdk import ValidationError
    from tests.auth.conftest import managed_app

    config = base_config(tmp_path, app=managed_app())
    async with open_sdk_on(kind, config, tmp_path) as sdk:
        assert (await sdk.get_sign_in_options()).federation is None
        with pytest.raises(ValidationError, match="not configured"):
            await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
        with pytest.raises(ValidationError, match="not configured"):
            await sdk.finish_federated_sign_in(state="x" * 43, code="abc")
        with pytest.raises(ValidationError, match="not configured"):
            await sdk.get_saml_metadata()


async def test_sign_in_on_postgresql(pg_url: str, provider: Provider, tmp_path: Path) -> None:
    storage = {"type": "postgresql", "url": pg_url, "seal_key_file": str(tmp_path / "seal.key")}
    config = base_config(tmp_path, app=oidc_app(provider), storage=storage)
    async with PluginSDK(config=config) as sdk:
        begun = await sdk.start_federated_sign_in(redirect_uri=REDIRECT)
        answer = await asyncio.to_thread(play_browser, begun.redirect_url, REDIRECT, "pat")
        assert (await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])).id_token
        assert await roles(sdk, "pat") == {"admin"}
        with pytest.raises(AuthenticationError, match="unknown, used or expired"):
            await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
