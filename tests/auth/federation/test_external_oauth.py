"""External OAuth IdP: tokens verified against the IdP's JWKS (loopback server), cached; provider-mode rules."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from pluginsdk import AuthenticationError, ConfigurationError, PermissionDeniedError, PluginSDK
from tests.auth.conftest import authenticate, call_as
from tests.support.backends import open_sdk

ISSUER = "https://idp.example.test"
CLIENT = "web-client"


class IdP:
    """A loopback JWKS endpoint with rotating RSA keys; counts downloads."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}
        self.hits = 0
        self.add_key("k1")
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                idp.hits += 1
                body = json.dumps({"keys": [idp.public(k) for k in idp.keys]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add_key(self, kid: str) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def public(self, kid: str) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
        return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}

    def token(self, kid: str = "k1", *, name_key: bool = True, **claims: Any) -> str:
        """A token signed by `kid`'s key, its header naming it unless `name_key` is false."""
        now = int(time.time())
        body = {"iss": ISSUER, "aud": CLIENT, "sub": "ivy", "email": "ivy@example.com", "iat": now, "exp": now + 300}
        body.update(claims)
        return jwt.encode(body, self.keys[kid], algorithm="RS256", headers={"kid": kid} if name_key else None)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def idp() -> Iterator[IdP]:
    server = IdP()
    try:
        yield server
    finally:
        server.close()


def external_app(idp: IdP, **extra: Any) -> dict[str, Any]:
    conf = {
        "enabled": True,
        "idpUrl": ISSUER,
        "clientId": CLIENT,
        "issuer": ISSUER,
        "jwksUrl": idp.url,
        "scope": "openid email",
        "tokenEndpoint": f"{ISSUER}/token",
        **extra,
    }
    return {"authProvider": {"useExternalOAuthIdp": conf, "authorizerOptions": {"defaultUserRoleName": None}}}


@pytest.fixture
async def ext_sdk(idp: IdP, tmp_path: Path) -> AsyncIterator[PluginSDK]:
    async with open_sdk("local", tmp_path, app=external_app(idp, jwksMinRefreshSeconds=0.2)) as sdk:
        yield sdk


async def test_idp_token_authenticates_and_keys_are_cached(ext_sdk: PluginSDK, idp: IdP) -> None:
    await ext_sdk.create_user_roles("ivy", ["basicReadOnly"])
    for _ in range(5):
        p = await authenticate(ext_sdk, f"Bearer {idp.token()}")
    assert p.user_id == "ivy" and p.auth_method == "oauth" and p.email == "ivy@example.com" and not p.mfa
    assert idp.hits == 1
    assert (await call_as(ext_sdk, p, "list_templates")).templates == []
    with pytest.raises(PermissionDeniedError):
        await call_as(ext_sdk, p, "list_roles")


async def test_rotated_key_is_fetched_once_then_rate_limited(ext_sdk: PluginSDK, idp: IdP) -> None:
    # Made first: RSA key generation on a loaded machine can outlast jwksMinRefreshSeconds.
    forged = jwt.encode(
        {"iss": ISSUER, "aud": CLIENT, "sub": "x", "exp": int(time.time()) + 60},
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        algorithm="RS256",
        headers={"kid": "unknown"},
    )
    await authenticate(ext_sdk, f"Bearer {idp.token()}")
    idp.add_key("k2")
    await asyncio.sleep(0.25)  # past jwksMinRefreshSeconds
    await authenticate(ext_sdk, f"Bearer {idp.token('k2')}")
    assert idp.hits == 2
    for _ in range(5):
        with pytest.raises(AuthenticationError):
            await authenticate(ext_sdk, f"Bearer {forged}")
    assert idp.hits == 2  # unknown kids do not trigger a download per request


async def test_a_token_without_kid_is_checked_against_the_only_key(ext_sdk: PluginSDK, idp: IdP) -> None:
    # OpenID Connect Core 10.1 and RFC 7515 let a provider with one key leave kid out (oidc-provider-mock does)
    p = await authenticate(ext_sdk, f"Bearer {idp.token(name_key=False)}")
    assert p.user_id == "ivy"
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode({"iss": ISSUER, "aud": CLIENT, "sub": "ivy", "exp": int(time.time()) + 60}, stranger, "RS256")
    with pytest.raises(AuthenticationError, match="invalid or expired"):
        await authenticate(ext_sdk, f"Bearer {forged}")


async def test_a_token_without_kid_is_refused_when_the_provider_has_several_keys(idp: IdP, tmp_path: Path) -> None:
    idp.add_key("k2")
    async with open_sdk("local", tmp_path, app=external_app(idp)) as sdk:
        with pytest.raises(AuthenticationError, match=r"names no signing key \(kid\).*2 keys"):
            await authenticate(sdk, f"Bearer {idp.token('k2', name_key=False)}")
        assert (await authenticate(sdk, f"Bearer {idp.token('k2')}")).user_id == "ivy"  # named: found


async def test_mfa_from_amr_claim(ext_sdk: PluginSDK, idp: IdP) -> None:
    assert (await authenticate(ext_sdk, f"Bearer {idp.token(amr=['pwd', 'mfa'])}")).mfa is True
    assert (await authenticate(ext_sdk, f"Bearer {idp.token(amr=['pwd'])}")).mfa is False


@pytest.mark.parametrize(
    "claims",
    [{"aud": "other-client"}, {"iss": "https://evil.example"}, {"exp": int(time.time()) - 70}, {"sub": ""}],
    ids=["audience", "issuer", "expired", "no-subject"],
)
async def test_bad_idp_tokens_are_401(ext_sdk: PluginSDK, idp: IdP, claims: dict[str, Any]) -> None:
    with pytest.raises(AuthenticationError):
        await authenticate(ext_sdk, f"Bearer {idp.token(**claims)}")


async def test_clock_skew_is_allowed_and_no_more(idp: IdP, tmp_path: Path) -> None:
    async with open_sdk("local", tmp_path, app=external_app(idp, clockSkewSeconds=30)) as sdk:
        late = await authenticate(sdk, f"Bearer {idp.token(exp=int(time.time()) - 10)}")  # 10 s past, within 30
        assert late.user_id == "ivy"
        with pytest.raises(AuthenticationError):
            await authenticate(sdk, f"Bearer {idp.token(exp=int(time.time()) - 40)}")
        with pytest.raises(AuthenticationError):  # issued in the future beyond the skew
            await authenticate(sdk, f"Bearer {idp.token(iat=int(time.time()) + 40, nbf=int(time.time()) + 40)}")


async def test_a_token_seen_before_is_refused_once_it_expires(idp: IdP, tmp_path: Path) -> None:
    """A token that passed is remembered (the next check is a lookup), never past its `exp` and the skew."""
    async with open_sdk("local", tmp_path, app=external_app(idp, clockSkewSeconds=0)) as sdk:
        token = idp.token(exp=int(time.time()) + 2)
        for _ in range(3):
            assert (await authenticate(sdk, f"Bearer {token}")).user_id == "ivy"
        await asyncio.sleep(3)
        with pytest.raises(AuthenticationError):
            await authenticate(sdk, f"Bearer {token}")


async def test_hs256_and_none_are_refused(ext_sdk: PluginSDK, idp: IdP) -> None:
    claims = {"iss": ISSUER, "aud": CLIENT, "sub": "ivy", "exp": int(time.time()) + 60}
    for token in (
        jwt.encode(claims, "s" * 32, algorithm="HS256", headers={"kid": "k1"}),
        jwt.encode(claims, None, algorithm="none", headers={"kid": "k1"}),
    ):
        with pytest.raises(AuthenticationError):
            await authenticate(ext_sdk, f"Bearer {token}")


async def test_amplify_config_names_the_idp(ext_sdk: PluginSDK) -> None:
    cfg = await ext_sdk.get_amplify_config()
    wire = cfg.model_dump(by_alias=True)
    assert wire["externalOAuthIdpURL"] == ISSUER and wire["externalOAuthIdpClientId"] == CLIENT
    assert wire["managedUserPoolId"] == "undefined" and wire["managedUserPoolEndpoint"] == "undefined"
    assert "AUTHPROVIDER_EXTERNALOAUTHIDP" in (await ext_sdk.get_secure_config()).features_enabled


@pytest.mark.parametrize(
    "app",
    [
        {"useManaged": {"enabled": True}, "useExternalOAuthIdp": {"enabled": True, "issuer": ISSUER,
                                                                   "clientId": "c", "jwksUrl": "https://x/j"}},
        {"useManaged": {"enabled": True, "useOidc": True, "useSaml": True}},
        {"useManaged": {"enabled": False, "useOidc": True}},
        {"useExternalOAuthIdp": {"enabled": True, "issuer": ISSUER, "clientId": "c", "jwksUrl": "http://idp.example/j"}},
        {"useExternalOAuthIdp": {"enabled": True, "issuer": ISSUER, "clientId": "c"}},
        {"useManaged": {"enabled": True, "signingAlgorithm": "HS256"}},
        {"secretsKey": "too-short"},
        {"useManaged": {"enabled": True, "passwordHashing": {"memoryKib": 8, "parallelism": 4}}},
    ],
    ids=["both-modes", "oidc-and-saml", "federation-without-pool", "http-jwks", "no-jwks", "hs256", "bad-secrets-key",
         "argon2-memory-below-8-per-lane"],
)  # fmt: skip
async def test_provider_mode_configuration_errors(tmp_path: Path, app: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        async with open_sdk("local", tmp_path, app={"authProvider": app}):
            pass
