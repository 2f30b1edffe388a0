"""Managed-pool sessions: sign-in, temporary passwords, refresh, sign-out, TOTP MFA, JWKS, mfaRequired roles."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pyotp
import pytest

from pluginsdk import AuthenticationError, PermissionDeniedError, PluginSDK, ValidationError
from tests.auth.conftest import Mailbox, authenticate, call_as, managed_app
from tests.support.backends import open_sdk

PASSWORD = "Correct-Horse-9-Battery"


@pytest.fixture
async def pool(tmp_path: Path, mailbox: Mailbox) -> AsyncIterator[PluginSDK]:
    async with open_sdk("local", tmp_path, app=managed_app(mailbox)) as sdk:
        yield sdk


async def _user(
    sdk: PluginSDK, mailbox: Mailbox, user_id: str = "gus", roles: tuple[str, ...] = ("basicReadOnly",)
) -> Any:
    await sdk.create_managed_user(user_id=user_id, email=f"{user_id}@example.com")
    if roles:
        await sdk.create_user_roles(user_id, list(roles))
    return await sdk.login(user_id, mailbox.temporary_password(), new_password=PASSWORD)


async def test_temporary_password_must_be_changed_at_first_sign_in(pool: PluginSDK, mailbox: Mailbox) -> None:
    await pool.create_managed_user(user_id="hal", email="hal@example.com")
    temp = mailbox.temporary_password()
    challenge = await pool.login("hal", temp)
    assert challenge.challenge_name == "NEW_PASSWORD_REQUIRED" and challenge.id_token is None
    with pytest.raises(ValidationError):
        await pool.login("hal", temp, new_password="short")
    with pytest.raises(ValidationError):
        await pool.login("hal", temp, new_password="hal-Contains-Name-1")
    tokens = await pool.login("hal", temp, new_password=PASSWORD)
    assert tokens.id_token and tokens.refresh_token and tokens.token_type == "Bearer" and tokens.mfa is False
    assert PASSWORD not in str(tokens) and tokens.id_token not in repr(tokens)
    with pytest.raises(AuthenticationError):
        await pool.login("hal", temp)  # the temporary password is gone
    users = {u.user_id: u for u in (await pool.list_managed_users()).users}
    assert users["hal"].user_status == "CONFIRMED"
    assert (await pool.login("hal", PASSWORD)).id_token


async def test_wrong_password_and_unknown_user_look_the_same(pool: PluginSDK, mailbox: Mailbox) -> None:
    await _user(pool, mailbox)
    with pytest.raises(AuthenticationError) as a:
        await pool.login("gus", "wrong-password")
    with pytest.raises(AuthenticationError) as b:
        await pool.login("nobody", "wrong-password")
    assert a.value.message == b.value.message


async def test_id_token_verifies_against_the_published_jwks(pool: PluginSDK, mailbox: Mailbox) -> None:
    tokens = await _user(pool, mailbox)
    jwks = await pool.get_jwks()
    header = jwt.get_unverified_header(tokens.id_token)
    jwk = next(k for k in jwks.keys if k["kid"] == header["kid"])
    assert "d" not in jwk and jwk["alg"] == "EdDSA"
    key = jwt.PyJWK(jwk)
    claims = jwt.decode(tokens.id_token, key, algorithms=[jwk["alg"]], audience="pluginsdk", issuer="pluginsdk")
    assert claims["sub"] == "gus" and claims["token_use"] == "id" and claims["email"] == "gus@example.com"


async def test_bearer_token_acts_as_the_user(pool: PluginSDK, mailbox: Mailbox) -> None:
    tokens = await _user(pool, mailbox)
    p = await authenticate(pool, f"Bearer {tokens.id_token}")
    assert p.user_id == "gus" and p.auth_method == "jwt" and p.mfa is False and p.email == "gus@example.com"
    assert (await call_as(pool, p, "list_templates")).templates == []
    with pytest.raises(PermissionDeniedError):
        await call_as(pool, p, "list_roles")
    tampered = tokens.id_token[:-4] + ("AAAA" if not tokens.id_token.endswith("AAAA") else "BBBB")
    for bad in (f"Bearer {tampered}", "Bearer not.a.jwt", f"Bearer {tokens.refresh_token}"):
        with pytest.raises(AuthenticationError):
            await authenticate(pool, bad)


async def test_forged_token_with_other_key_is_rejected(pool: PluginSDK, mailbox: Mailbox) -> None:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    tokens = await _user(pool, mailbox)
    claims = jwt.decode(tokens.id_token, options={"verify_signature": False})
    kid = jwt.get_unverified_header(tokens.id_token)["kid"]
    forged = jwt.encode(claims, ed25519.Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": kid})
    with pytest.raises(AuthenticationError):
        await authenticate(pool, f"Bearer {forged}")
    hs = jwt.encode(claims, "k" * 32, algorithm="HS256", headers={"kid": kid})
    with pytest.raises(AuthenticationError):
        await authenticate(pool, f"Bearer {hs}")


async def test_refresh_and_logout(pool: PluginSDK, mailbox: Mailbox) -> None:
    tokens = await _user(pool, mailbox)
    fresh = await pool.refresh_tokens(tokens.refresh_token)
    assert fresh.id_token and fresh.refresh_token is None
    assert (await authenticate(pool, f"Bearer {fresh.id_token}")).user_id == "gus"
    p = await authenticate(pool, f"Bearer {tokens.id_token}")
    await call_as(pool, p, "logout")
    for header in (f"Bearer {tokens.id_token}", f"Bearer {fresh.id_token}"):
        with pytest.raises(AuthenticationError):
            await authenticate(pool, header)
    with pytest.raises(AuthenticationError):
        await pool.refresh_tokens(tokens.refresh_token)
    with pytest.raises(AuthenticationError):
        await pool.refresh_tokens("rt.unknown")


async def test_change_password_signs_out_other_sessions(pool: PluginSDK, mailbox: Mailbox) -> None:
    first = await _user(pool, mailbox)
    second = await pool.login("gus", PASSWORD)
    p = await authenticate(pool, f"Bearer {second.id_token}")
    with pytest.raises(AuthenticationError):
        await call_as(pool, p, "change_password", previous_password="wrong", proposed_password="Another-Pass-42")
    with pytest.raises(ValidationError):
        await call_as(pool, p, "change_password", previous_password=PASSWORD, proposed_password="weak")
    await call_as(pool, p, "change_password", previous_password=PASSWORD, proposed_password="Another-Pass-42")
    with pytest.raises(AuthenticationError):
        await authenticate(pool, f"Bearer {first.id_token}")
    assert (await authenticate(pool, f"Bearer {second.id_token}")).user_id == "gus"
    with pytest.raises(AuthenticationError):
        await pool.login("gus", PASSWORD)
    assert (await pool.login("gus", "Another-Pass-42")).id_token


async def test_totp_setup_makes_sessions_multi_factor(pool: PluginSDK, mailbox: Mailbox) -> None:
    tokens = await _user(pool, mailbox)
    p = await authenticate(pool, f"Bearer {tokens.id_token}")
    with pytest.raises(ValidationError):
        await call_as(pool, p, "verify_mfa", code="123456")  # nothing pending
    setup = await call_as(pool, p, "setup_mfa")
    assert setup.secret_code not in str(setup) and setup.otpauth_uri.startswith("otpauth://totp/")
    totp = pyotp.TOTP(setup.secret_code)
    wrong = f"{(int(totp.now()) + 500000) % 1000000:06d}"
    with pytest.raises(ValidationError):
        await call_as(pool, p, "verify_mfa", code=wrong)
    enabling = totp.now()
    verified = await call_as(pool, p, "verify_mfa", code=enabling)
    assert verified.mfa is True
    assert (await authenticate(pool, f"Bearer {tokens.id_token}")).mfa is True  # this session is now MFA
    challenge = await pool.login("gus", PASSWORD)
    assert challenge.challenge_name == "SOFTWARE_TOKEN_MFA" and challenge.id_token is None
    with pytest.raises(AuthenticationError):
        await pool.login("gus", PASSWORD, totp_code=wrong)
    with pytest.raises(AuthenticationError):  # the code that enabled MFA is spent (tests/auth/test_totp_once.py)
        await pool.login("gus", PASSWORD, totp_code=enabling)
    mfa_tokens = await pool.login("gus", PASSWORD, totp_code=totp.at(time.time() + 30))
    assert mfa_tokens.mfa and (await authenticate(pool, f"Bearer {mfa_tokens.id_token}")).mfa
    users = {u.user_id: u for u in (await pool.list_managed_users()).users}
    assert users["gus"].mfa_enabled
    if pool.backend.name == "local":
        row = await pool.backend.engine.store.db.fetchone("SELECT totp_secret FROM auth_users WHERE user_id = 'gus'")  # type: ignore[attr-defined]
        assert row is not None and setup.secret_code not in row["totp_secret"]


async def test_mfa_required_role_applies_only_in_mfa_sessions(pool: PluginSDK, mailbox: Mailbox) -> None:
    await pool.create_role(role_name="secure-admins", description="Admins with MFA", mfa_required=True)
    await pool.create_constraint(
        "secure-roles",
        name="secure admins read roles",
        description="MFA-only role management",
        object_type="api",
        criteria_or=[{"field": "route__path", "operator": "starts_with", "value": "/roles"}],
        group_permissions=[{"groupId": "secure-admins", "permission": "GET", "permissionType": "allow"}],
    )
    await pool.create_constraint(
        "secure-role-objects",
        name="secure admins see roles",
        description="MFA-only role objects",
        object_type="role",
        criteria_or=[{"field": "roleName", "operator": "equals", "value": "*"}],
        group_permissions=[{"groupId": "secure-admins", "permission": "GET", "permissionType": "allow"}],
    )
    tokens = await _user(pool, mailbox, roles=("basicReadOnly", "secure-admins"))
    plain = await authenticate(pool, f"Bearer {tokens.id_token}")
    with pytest.raises(PermissionDeniedError):
        await call_as(pool, plain, "list_roles")
    setup = await call_as(pool, plain, "setup_mfa")
    await call_as(pool, plain, "verify_mfa", code=pyotp.TOTP(setup.secret_code).now())
    mfa = await authenticate(pool, f"Bearer {tokens.id_token}")
    assert mfa.mfa
    assert (await call_as(pool, mfa, "list_roles")).message.items
    key = (await pool.create_api_key(api_key_name="g", user_id="gus", description="never MFA")).api_key
    with pytest.raises(PermissionDeniedError):
        await call_as(pool, await authenticate(pool, key), "list_roles")


async def test_login_needs_the_managed_pool(local_sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError):
        await local_sdk.login("anyone", "whatever")
    assert (await local_sdk.get_jwks()).keys == []
    with pytest.raises(AuthenticationError):
        await authenticate(local_sdk, "Bearer abc.def.ghi")


async def test_rs256_signing(tmp_path: Path, mailbox: Mailbox) -> None:
    app = managed_app(mailbox)
    app["authProvider"]["useManaged"]["signingAlgorithm"] = "RS256"
    async with open_sdk("local", tmp_path, app=app) as sdk:
        tokens = await _user(sdk, mailbox)
        assert jwt.get_unverified_header(tokens.id_token)["alg"] == "RS256"
        assert (await authenticate(sdk, f"Bearer {tokens.id_token}")).user_id == "gus"
        assert {k["kty"] for k in (await sdk.get_jwks()).keys} >= {"RSA"}
