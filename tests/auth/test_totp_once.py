"""A TOTP code is accepted once: no replay within its window, on both backends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pyotp
import pytest

from pluginsdk import AuthenticationError, PluginSDK
from tests.auth.conftest import Mailbox, managed_app
from tests.support.backends import open_sdk

PASSWORD = "Correct-Horse-9-Battery"


@asynccontextmanager
async def as_session(sdk: PluginSDK, id_token: str) -> AsyncIterator[PluginSDK]:
    """A remote SDK presenting a user's id token to the same server."""
    async with PluginSDK(backend="remote", api_url=sdk.settings.api.url, config={"api": {"token": id_token}}) as s:
        yield s


async def enrolled(sdk: PluginSDK, mailbox: Mailbox, user_id: str, tmp_path: Path) -> tuple[pyotp.TOTP, str]:
    """A user with MFA enabled; returns the authenticator and the code that enabled it."""
    await sdk.create_managed_user(user_id=user_id, email=f"{user_id}@example.com")
    await sdk.create_user_roles(user_id, ["basicReadOnly"])
    tokens = await sdk.login(user_id, mailbox.temporary_password(), new_password=PASSWORD)
    assert tokens.id_token
    if sdk.backend.name == "remote":
        async with as_session(sdk, tokens.id_token) as me:
            setup = await me.setup_mfa()
            totp = pyotp.TOTP(setup.secret_code)
            code = totp.now()
            assert (await me.verify_mfa(code=code)).mfa is True
        return totp, code
    from tests.auth.conftest import authenticate, call_as

    principal = await authenticate(sdk, f"Bearer {tokens.id_token}")
    setup = await call_as(sdk, principal, "setup_mfa")
    totp = pyotp.TOTP(setup.secret_code)
    code = totp.now()
    assert (await call_as(sdk, principal, "verify_mfa", code=code)).mfa is True
    return totp, code


@pytest.fixture
async def pool(backend_kind: str, tmp_path: Path, mailbox: Mailbox) -> AsyncIterator[PluginSDK]:
    async with open_sdk(backend_kind, tmp_path, app=managed_app(mailbox)) as sdk:
        yield sdk


async def test_a_totp_code_signs_in_once(pool: PluginSDK, mailbox: Mailbox, tmp_path: Path) -> None:
    totp, enabling = await enrolled(pool, mailbox, "gus", tmp_path)
    with pytest.raises(AuthenticationError) as spent:  # the code that enabled MFA is used up
        await pool.login("gus", PASSWORD, totp_code=enabling)
    assert spent.value.status == 401 and "used" in spent.value.message
    nxt = totp.at(time.time() + 30)  # the next time-step's code, inside the accepted window
    assert (await pool.login("gus", PASSWORD, totp_code=nxt)).mfa is True
    with pytest.raises(AuthenticationError):  # replayed within its window
        await pool.login("gus", PASSWORD, totp_code=nxt)
    with pytest.raises(AuthenticationError):  # an older step's code, after a newer one was accepted
        await pool.login("gus", PASSWORD, totp_code=totp.at(time.time() - 30))


async def test_two_sign_ins_racing_with_one_code(pool: PluginSDK, mailbox: Mailbox, tmp_path: Path) -> None:
    totp, _ = await enrolled(pool, mailbox, "ida", tmp_path)
    code = totp.at(time.time() + 30)
    results = await asyncio.gather(
        *(pool.login("ida", PASSWORD, totp_code=code) for _ in range(4)), return_exceptions=True
    )
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 1 and won[0].mfa is True, results
    assert all(isinstance(e, AuthenticationError) for e in lost), lost


async def test_each_user_has_their_own_last_step(pool: PluginSDK, mailbox: Mailbox, tmp_path: Path) -> None:
    a, _ = await enrolled(pool, mailbox, "joe", tmp_path)
    b, _ = await enrolled(pool, mailbox, "kimi", tmp_path)
    later = time.time() + 30
    assert (await pool.login("joe", PASSWORD, totp_code=a.at(later))).mfa is True
    assert (await pool.login("kimi", PASSWORD, totp_code=b.at(later))).mfa is True
