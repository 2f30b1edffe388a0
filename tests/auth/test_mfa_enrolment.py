"""A second factor is proved, not re-enrolled: replacing or turning off an enrolled authenticator needs it.

Sessions act through the SDK on both backends: in-process as the principal a Bearer token authenticates
(as the server does), remotely as a remote SDK presenting the token to the real server.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pyotp
import pytest

from pluginsdk import (
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    PluginSDK,
    StateConflictError,
    ValidationError,
)
from pluginsdk.models.auth_results import SessionTokens
from tests.auth.conftest import Mailbox, authenticate, call_as, managed_app
from tests.support.backends import open_sdk

PASSWORD = "Correct-Horse-9-Battery"

Call = Callable[..., Awaitable[Any]]


@pytest.fixture
async def pool(backend_kind: str, tmp_path: Path, mailbox: Mailbox) -> AsyncIterator[PluginSDK]:
    async with open_sdk(backend_kind, tmp_path, app=managed_app(mailbox)) as sdk:
        yield sdk


@asynccontextmanager
async def session(sdk: PluginSDK, tokens: SessionTokens) -> AsyncIterator[Call]:
    """`call(name, **params)` as the session these tokens name."""
    id_token = str(tokens.id_token)
    if sdk.backend.name == "remote":
        async with PluginSDK(backend="remote", api_url=sdk.settings.api.url, config={"api": {"token": id_token}}) as s:

            async def remote(name: str, **params: Any) -> Any:
                return await getattr(s, name)(**params)

            yield remote
        return

    async def local(name: str, **params: Any) -> Any:
        return await call_as(sdk, await authenticate(sdk, f"Bearer {id_token}"), name, **params)

    yield local


async def is_mfa(sdk: PluginSDK, tokens: SessionTokens) -> bool:
    """Whether the session is multi-factor now, as the server decides it."""
    if sdk.backend.name == "remote":
        assert tokens.refresh_token
        return bool((await sdk.refresh_tokens(tokens.refresh_token)).mfa)
    return (await authenticate(sdk, f"Bearer {tokens.id_token}")).mfa


async def sign_in(sdk: PluginSDK, user_id: str, code: str | None = None) -> SessionTokens:
    tokens = await sdk.login(user_id, PASSWORD, totp_code=code)
    assert tokens.id_token and tokens.refresh_token, tokens.challenge_name
    return tokens


async def new_user(sdk: PluginSDK, mailbox: Mailbox, user_id: str) -> None:
    await sdk.create_managed_user(user_id=user_id, email=f"{user_id}@example.com")
    await sdk.create_user_roles(user_id, ["basicReadOnly"])
    first = await sdk.login(user_id, mailbox.temporary_password(), new_password=PASSWORD)
    assert first.id_token


async def enrol(me: Call) -> pyotp.TOTP:
    setup = await me("setup_mfa")
    totp = pyotp.TOTP(setup.secret_code)
    # the previous time-step's code (accepted for clock drift): the now and next ones stay usable
    assert (await me("verify_mfa", code=later(totp, -1))).mfa is True
    return totp


def later(totp: pyotp.TOTP, steps: int = 1) -> str:
    """A code of a later time-step still inside the accepted window (each code signs in once)."""
    return str(totp.at(time.time() + 30 * steps))


async def test_a_password_only_session_cannot_replace_or_remove_the_authenticator(
    pool: PluginSDK, mailbox: Mailbox
) -> None:
    await new_user(pool, mailbox, "gus")
    stolen = await sign_in(pool, "gus")  # a password-only session, opened before MFA was enabled
    owner = await sign_in(pool, "gus")
    async with session(pool, owner) as me:
        totp = await enrol(me)
    async with session(pool, stolen) as thief:
        with pytest.raises(PermissionDeniedError) as refused:
            await thief("setup_mfa")
        assert refused.value.status == 403 and refused.value.details["field"] == "code"
        wrong = f"{(int(totp.now()) + 500000) % 1000000:06d}"
        with pytest.raises(PermissionDeniedError):
            await thief("setup_mfa", code=wrong)
        with pytest.raises(ValidationError):  # nothing pending in this session: the owner's set-up is done
            await thief("verify_mfa", code=totp.now())
        with pytest.raises(PermissionDeniedError):
            await thief("disable_mfa")
    assert not await is_mfa(pool, stolen)
    assert await is_mfa(pool, owner)
    # the owner's authenticator still signs in, and the stolen session stayed password-only
    assert (await pool.login("gus", PASSWORD, totp_code=later(totp))).mfa is True
    assert (await pool.list_managed_users()).users[0].mfa_enabled


async def test_the_current_code_lets_a_session_replace_the_authenticator(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "ida")
    plain = await sign_in(pool, "ida")
    async with session(pool, await sign_in(pool, "ida")) as first:
        old = await enrol(first)
    async with session(pool, plain) as me:
        setup = await me("setup_mfa", code=old.now())  # proves the enrolled factor
        new = pyotp.TOTP(setup.secret_code)
        # pending: the enrolled secret stays in force until this session verifies the new one
        assert (await pool.login("ida", PASSWORD, totp_code=later(old))).mfa
        with pytest.raises(AuthenticationError):
            await pool.login("ida", PASSWORD, totp_code=new.now())
        assert (await me("verify_mfa", code=new.now())).mfa is True
    assert await is_mfa(pool, plain)  # it proved the old factor, then the new one
    with pytest.raises(AuthenticationError):
        await pool.login("ida", PASSWORD, totp_code=old.now())
    assert (await pool.login("ida", PASSWORD, totp_code=later(new))).mfa


async def test_a_pending_set_up_is_verified_only_by_the_session_that_started_it(
    pool: PluginSDK, mailbox: Mailbox
) -> None:
    await new_user(pool, mailbox, "joe")
    async with session(pool, await sign_in(pool, "joe")) as first:
        totp = await enrol(first)
        setup = await first("setup_mfa")  # a multi-factor session needs no code
    pending = pyotp.TOTP(setup.secret_code)
    other = await sign_in(pool, "joe", later(totp))
    async with session(pool, other) as second:
        with pytest.raises(ValidationError):
            await second("verify_mfa", code=pending.now())
    with pytest.raises(AuthenticationError):  # never enrolled
        await pool.login("joe", PASSWORD, totp_code=pending.now())


async def test_disabling_needs_the_factor_and_ends_multi_factor_sessions(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "kim")
    plain = await sign_in(pool, "kim")
    mfa = await sign_in(pool, "kim")
    async with session(pool, mfa) as me:
        totp = await enrol(me)
    async with session(pool, plain) as me:
        with pytest.raises(PermissionDeniedError):
            await me("disable_mfa")
        assert (await me("disable_mfa", code=later(totp))).mfa is False
        with pytest.raises(ValidationError):
            await me("disable_mfa")  # not enabled any more
    assert not await is_mfa(pool, mfa)
    tokens = await pool.login("kim", PASSWORD)
    assert tokens.id_token and tokens.challenge_name is None


async def test_an_administrator_resets_a_lost_authenticator(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "lea")
    mfa = await sign_in(pool, "lea")
    async with session(pool, mfa) as me:
        await enrol(me)
    reset = await pool.reset_managed_user_mfa("lea")
    assert reset.operation == "resetMfa" and reset.user is not None and not reset.user.mfa_enabled
    assert not await is_mfa(pool, mfa)
    assert (await pool.login("lea", PASSWORD)).id_token
    with pytest.raises(NotFoundError):
        await pool.reset_managed_user_mfa("ghost")


async def test_the_last_administrator_able_to_sign_in_with_mfa_keeps_it(pool: PluginSDK, mailbox: Mailbox) -> None:
    """With `admin` MFA-only, turning off the MFA of its last MFA-capable holder is refused like any lock-out."""
    await new_user(pool, mailbox, "root")
    await pool.create_user_roles("root", ["admin"])
    async with session(pool, await sign_in(pool, "root")) as me:
        await enrol(me)
        await pool.update_role("admin", mfa_required=True)  # root can still administer, with MFA
        with pytest.raises(StateConflictError) as refused:
            await me("disable_mfa")
        assert refused.value.status == 409 and "break-glass" in refused.value.message
        await me("update_role", role_name="admin", mfa_required=False)
        assert (await me("disable_mfa")).mfa is False
    assert (await pool.login("root", PASSWORD)).id_token  # no MFA challenge any more


async def test_every_mfa_and_password_change_is_audited(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "max")  # the temporary password replaced at first sign-in
    async with session(pool, await sign_in(pool, "max")) as me:
        totp = await enrol(me)
        await me("change_password", previous_password=PASSWORD, proposed_password="Another-Pass-42")
        await me("disable_mfa")  # this session proved the factor
        await enrol(me)
    await pool.reset_managed_user_mfa("max")
    await pool.reset_managed_user_password("max", confirm_reset=True)
    records = (await pool.list_audit_records(target_id="max", page_size=100)).records
    actions = [r.action for r in records if r.target_type == "managedUser"]
    assert actions == [
        "create_managed_user",
        "change_password",
        "setup_mfa",
        "verify_mfa",
        "change_password",
        "disable_mfa",
        "setup_mfa",
        "verify_mfa",
        "reset_managed_user_mfa",
        "reset_managed_user_password",
    ], actions
    by_action = {r.action: r for r in records}
    assert by_action["verify_mfa"].actor == "max" and by_action["reset_managed_user_mfa"].actor != "max"
    assert by_action["verify_mfa"].after["mfa_enabled"] == 1 and by_action["disable_mfa"].after["mfa_enabled"] == 0
    dumped = str([r.model_dump() for r in records])
    assert totp.secret not in dumped and "totp_secret" not in dumped and "password_hash" not in dumped


async def test_an_api_key_never_enrols_mfa(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "ned")
    key = (await pool.create_api_key(api_key_name="k", user_id="ned", description="no MFA through keys")).api_key
    if pool.backend.name == "local":
        p = await authenticate(pool, key)
        for name, params in (("setup_mfa", {}), ("verify_mfa", {"code": "123456"}), ("disable_mfa", {})):
            with pytest.raises(PermissionDeniedError):
                await call_as(pool, p, name, **params)
        return
    async with httpx.AsyncClient(base_url=pool.settings.api.url.rstrip("/"), headers={"Authorization": key}) as c:
        for path, body in (("setup", {}), ("verify", {"code": "123456"}), ("disable", {})):
            r = await c.post(f"/auth/user/mfa/{path}", json=body)
            assert r.status_code == 403, r.text
            envelope = r.json()
            assert envelope["success"] is False and envelope["error_code"] == "FORBIDDEN"
            assert "API keys" in envelope["error"]
    async with PluginSDK(backend="remote", api_url=pool.settings.api.url, api_key=key) as as_key:
        with pytest.raises(PermissionDeniedError):
            await as_key.setup_mfa()
    users = {u.user_id: u for u in (await pool.list_managed_users()).users}
    assert not users["ned"].mfa_enabled


async def test_a_sign_in_says_when_a_held_role_waits_for_an_authenticator(pool: PluginSDK, mailbox: Mailbox) -> None:
    """`mfa_setup_required` (and the roles named) while a role the user holds requires MFA and no authenticator
    is enrolled; after enrolment the sign-in asks for the code instead, and the flag is gone."""
    await pool.create_role(role_name="vault", description="multi-factor only", mfa_required=True)
    await new_user(pool, mailbox, "ivy")
    assert (await sign_in(pool, "ivy")).mfa_setup_required is False  # basicReadOnly needs no second factor
    await pool.update_user_roles("ivy", ["basicReadOnly", "vault"])
    told = await sign_in(pool, "ivy")
    assert told.mfa_setup_required is True and "vault" in told.message and "basicReadOnly" not in told.message
    async with session(pool, told) as me:
        totp = await enrol(me)
    assert (await pool.login("ivy", PASSWORD)).challenge_name == "SOFTWARE_TOKEN_MFA"
    assert (await sign_in(pool, "ivy", later(totp))).mfa_setup_required is False
    assert (await pool.get_sign_in_options()).passwords is True
