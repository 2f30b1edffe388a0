"""Managed user-pool users: availability, CRUD, phone rules, password reset by mail."""

from __future__ import annotations

from pathlib import Path

import pytest

from pluginsdk import (
    AlreadyExistsError,
    AuthenticationError,
    InvalidPaginationToken,
    NotFoundError,
    PluginSDK,
    ValidationError,
)
from tests.auth.conftest import Mailbox, authenticate, call_as, managed_app
from tests.support.backends import open_sdk


async def test_unavailable_without_the_managed_pool(sdk: PluginSDK) -> None:
    calls = (
        sdk.list_managed_users(),
        sdk.create_managed_user(user_id="ann", email="ann@example.com"),
        sdk.update_managed_user("ann", email="a@example.com"),
        sdk.delete_managed_user("ann"),
        sdk.reset_managed_user_password("ann", confirm_reset=True),
    )
    for call in calls:
        with pytest.raises(ValidationError) as exc:
            await call
        assert "user management is unavailable" in exc.value.message.lower()


async def test_create_mails_a_temporary_password(managed_sdk: PluginSDK, mailbox: Mailbox) -> None:
    res = await managed_sdk.create_managed_user(user_id="ann", email="ann@example.com", phone="+15551234567")
    assert res.success and res.operation == "create" and res.user is not None
    assert res.user.user_status == "FORCE_CHANGE_PASSWORD" and res.user.enabled and not res.user.mfa_enabled
    assert res.user.phone == "+15551234567"
    assert mailbox.messages[-1]["To"] == "ann@example.com"
    password = mailbox.temporary_password()
    assert len(password) >= 16 and password not in res.model_dump_json()
    with pytest.raises(AlreadyExistsError):
        await managed_sdk.create_managed_user(user_id="ann", email="other@example.com")


@pytest.mark.parametrize(
    "body",
    [
        {"user_id": "ab", "email": "ok@example.com"},
        {"user_id": "bob", "email": "not-an-email"},
        {"user_id": "bob", "email": "bob@example.com", "phone": "5551234"},
        {"user_id": "bob", "email": "bob@example.com", "phone": "+0123"},
    ],
)
async def test_create_validation(managed_sdk: PluginSDK, body: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        await managed_sdk.create_managed_user(**body)


async def test_update_is_partial_with_phone_rules(managed_sdk: PluginSDK) -> None:
    sdk = managed_sdk
    await sdk.create_managed_user(user_id="ben", email="ben@example.com", phone="+441234567890")
    res = await sdk.update_managed_user("ben", email="ben2@example.com")
    assert res.user is not None and res.user.email == "ben2@example.com" and res.user.phone == "+441234567890"
    res = await sdk.update_managed_user("ben", clear_phone=True)
    assert res.user is not None and res.user.phone is None and res.user.email == "ben2@example.com"
    res = await sdk.update_managed_user("ben", phone="+15550000000")
    assert res.user is not None and res.user.phone == "+15550000000"
    res = await sdk.update_managed_user("ben", clear_phone=True, email="ben3@example.com")
    assert res.user is not None and res.user.phone is None and res.user.email == "ben3@example.com"
    for bad in ({}, {"phone": "+15550000000", "clear_phone": True}, {"phone": "+15550000000", "clear_phone": False}):
        with pytest.raises(ValidationError):
            await sdk.update_managed_user("ben", **bad)
    with pytest.raises(NotFoundError):
        await sdk.update_managed_user("nobody", email="x@example.com")


@pytest.mark.parametrize("confirm", [None, False, "no"])
async def test_reset_needs_confirm_true_and_sends_nothing_otherwise(
    managed_sdk: PluginSDK, mailbox: Mailbox, confirm: object
) -> None:
    await managed_sdk.create_managed_user(user_id="cat", email="cat@example.com")
    sent = len(mailbox.messages)
    kwargs = {} if confirm is None else {"confirm_reset": confirm}
    with pytest.raises(ValidationError):
        await managed_sdk.reset_managed_user_password("cat", **kwargs)
    assert len(mailbox.messages) == sent


async def test_reset_mails_a_new_password(managed_sdk: PluginSDK, mailbox: Mailbox) -> None:
    await managed_sdk.create_managed_user(user_id="dan", email="dan@example.com")
    first = mailbox.temporary_password()
    res = await managed_sdk.reset_managed_user_password("dan", confirm_reset=True)
    assert res.operation == "resetPassword" and "temporary password" in res.message
    second = mailbox.temporary_password()
    assert second != first and mailbox.messages[-1]["To"] == "dan@example.com"
    with pytest.raises(NotFoundError):
        await managed_sdk.reset_managed_user_password("ghost", confirm_reset=True)


async def test_list_pages(managed_sdk: PluginSDK) -> None:
    for i in range(5):
        await managed_sdk.create_managed_user(user_id=f"user{i}", email=f"u{i}@example.com")
    page = await managed_sdk.list_managed_users(page_size=2, max_items=60)
    ids = [u.user_id for u in page.users]
    while page.next_token:
        page = await managed_sdk.list_managed_users(page_size=2, starting_token=page.next_token)
        ids += [u.user_id for u in page.users]
    assert ids == [f"user{i}" for i in range(5)]
    assert len((await managed_sdk.list_managed_users(max_items=3)).users) == 3
    assert len((await managed_sdk.list_managed_users(max_items=1, page_size=4)).users) == 4  # pageSize wins
    for bad in ({"max_items": 61}, {"page_size": 0}, {"page_size": 61}):
        with pytest.raises(ValidationError):
            await managed_sdk.list_managed_users(**bad)
    with pytest.raises(InvalidPaginationToken):
        await managed_sdk.list_managed_users(starting_token="bogus")


async def test_create_without_smtp_shows_the_temporary_password_once(tmp_path: Path) -> None:
    """No mail server: the administrator gets the temporary password in the answer (masked in str())."""
    async with open_sdk("local", tmp_path, app=managed_app()) as sdk:
        res = await sdk.create_managed_user(user_id="eve", email="eve@example.com")
        temp = res.temporary_password
        assert temp and "shown this once" in res.message and temp not in str(res) + repr(res)
        with pytest.raises(AuthenticationError):
            await sdk.login("eve", "anything-at-all")
        assert (await sdk.login("eve", temp)).challenge_name == "NEW_PASSWORD_REQUIRED"
        reset = await sdk.reset_managed_user_password("eve", confirm_reset=True)
        assert reset.temporary_password and reset.temporary_password != temp
        with pytest.raises(AuthenticationError):
            await sdk.login("eve", temp)
        assert (await sdk.login("eve", reset.temporary_password)).challenge_name == "NEW_PASSWORD_REQUIRED"
        listed = (await sdk.list_managed_users()).model_dump_json()
        assert temp not in listed and reset.temporary_password not in listed


async def test_deleting_a_user_revokes_keys_and_sessions(tmp_path: Path, mailbox: Mailbox) -> None:
    async with open_sdk("local", tmp_path, app=managed_app(mailbox)) as sdk:
        await sdk.create_managed_user(user_id="fay", email="fay@example.com")
        await sdk.create_user_roles("fay", ["basicReadOnly"])
        temp = mailbox.temporary_password()
        tokens = await sdk.login("fay", temp, new_password="Brand-New-Secret-1")
        assert tokens.id_token
        key = (await sdk.create_api_key(api_key_name="fay", user_id="fay", description="fay key")).api_key
        key_principal = await authenticate(sdk, key)
        jwt_principal = await authenticate(sdk, f"Bearer {tokens.id_token}")
        assert await call_as(sdk, key_principal, "list_my_api_keys")
        assert jwt_principal.user_id == "fay"
        res = await sdk.delete_managed_user("fay")
        assert "revoked" in res.message
        for header in (key, f"Bearer {tokens.id_token}"):
            with pytest.raises(AuthenticationError):
                await authenticate(sdk, header)
        with pytest.raises(AuthenticationError):
            await sdk.refresh_tokens(tokens.refresh_token or "")
        with pytest.raises(NotFoundError):
            await sdk.delete_managed_user("fay")
