"""API keys: administrative and self-service variants, and keys as credentials."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pluginsdk import (
    AlreadyExistsError,
    AuthenticationError,
    InvalidPaginationToken,
    NotFoundError,
    PermissionDeniedError,
    PluginSDK,
    ValidationError,
)
from tests.auth.conftest import acting_as, authenticate, with_key

HARNESS_KEY = "test-harness"
"""The remote fixture's own admin key (tests/support/remote.py) also shows in admin listings."""


def harness_keys(sdk: PluginSDK) -> int:
    return 1 if sdk.backend.name == "remote" else 0


def harness_ids(seen: list[str], made: list[str]) -> set[str]:
    return {k for k in seen if k not in made}


def _in(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat()


async def test_create_returns_the_secret_once_and_stores_only_its_hash(sdk: PluginSDK) -> None:
    res = await sdk.create_api_key(api_key_name="ci", user_id="administrator", description="CI pipeline")
    assert res.api_key.startswith("psdk_") and len(res.api_key) >= 5 + 43
    assert res.is_active == "true" and res.user_id == "administrator" and res.created_by == "administrator"
    assert res.api_key not in str(res) and res.api_key not in repr(res)
    got = await sdk.get_api_key(res.api_key_id)
    assert "api_key" not in got.model_dump() and got.api_key_name == "ci"
    listed = [k for k in (await sdk.list_api_keys()).items if k.api_key_name != HARNESS_KEY]
    assert [k.api_key_id for k in listed] == [res.api_key_id]
    if sdk.backend.name == "local":
        db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
        row = await db.fetchone("SELECT * FROM auth_api_keys")
        assert row is not None and res.api_key not in str(row)
        assert row["key_hash"] == hashlib.sha256(res.api_key.encode()).hexdigest()


async def test_two_keys_never_share_a_secret(sdk: PluginSDK) -> None:
    a = await sdk.create_api_key(api_key_name="a", user_id="administrator", description="first key")
    b = await sdk.create_api_key(api_key_name="b", user_id="administrator", description="second key")
    assert a.api_key != b.api_key and a.api_key_id != b.api_key_id


async def test_admin_create_rules(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_api_key(api_key_name="k", user_id="nobody", description="no role held")
    assert exc.value.details["field"] == "user_id"
    await sdk.create_api_key(api_key_name="k", user_id="administrator", description="first")
    with pytest.raises(AlreadyExistsError):
        await sdk.create_api_key(api_key_name="k", user_id="administrator", description="same name")
    with pytest.raises(ValidationError):
        await sdk.create_api_key(api_key_name="short", user_id="administrator", description=" ab ")


@pytest.mark.parametrize(
    "expires",
    ["2030-01-01T00:00:00", "yesterday", "2020-01-01T00:00:00Z", "2020-01-01", "2030-13-01"],
    ids=["naive", "garbage", "past", "past-date", "bad-date"],
)
async def test_bad_expiry_is_400(sdk: PluginSDK, expires: str) -> None:
    with pytest.raises(ValidationError):
        await sdk.create_api_key(api_key_name="x", user_id="administrator", description="expiry", expires_at=expires)


async def test_date_only_expiry_means_end_of_that_day_utc(sdk: PluginSDK) -> None:
    day = (datetime.now(UTC) + timedelta(days=10)).date().isoformat()
    res = await sdk.create_api_key(api_key_name="d", user_id="administrator", description="date", expires_at=day)
    assert res.expires_at is not None
    assert res.expires_at.isoformat().startswith(f"{day}T23:59:59")
    assert res.expires_at.utcoffset() == timedelta(0)
    offset = await sdk.create_api_key(
        api_key_name="o", user_id="administrator", description="offset", expires_at="2031-06-01T12:00:00+02:00"
    )
    assert offset.expires_at == datetime(2031, 6, 1, 10, 0, tzinfo=UTC)


async def test_update_rules(sdk: PluginSDK) -> None:
    key = await sdk.create_api_key(api_key_name="u", user_id="administrator", description="update me")
    res = await sdk.update_api_key(key.api_key_id, is_active="false")
    assert res.is_active == "false" and res.updated_at >= key.updated_at
    res = await sdk.update_api_key(key.api_key_id, description="  new text ", expires_at=_in(30))
    assert res.description == "new text" and res.is_active == "false" and res.expires_at is not None
    res = await sdk.update_api_key(key.api_key_id, expires_at=None)  # admin may clear
    assert res.expires_at is None
    for bad in ({}, {"is_active": True}, {"is_active": "yes"}, {"api_key_name": "renamed"}, {"description": None}):
        with pytest.raises(ValidationError):
            await sdk.update_api_key(key.api_key_id, **bad)
    with pytest.raises(NotFoundError):
        await sdk.update_api_key("00000000-0000-0000-0000-000000000000", is_active="true")


async def test_delete_then_gone(sdk: PluginSDK) -> None:
    key = await sdk.create_api_key(api_key_name="del", user_id="administrator", description="delete me")
    res = await sdk.delete_api_key(key.api_key_id)
    assert "deleted" in res.message
    with pytest.raises(NotFoundError):
        await sdk.get_api_key(key.api_key_id)
    with pytest.raises(NotFoundError):
        await sdk.delete_api_key(key.api_key_id)


async def test_listing_pages_with_opaque_tokens(sdk: PluginSDK) -> None:
    made = [
        (await sdk.create_api_key(api_key_name=f"k{i}", user_id="administrator", description="paging")).api_key_id
        for i in range(5)
    ]
    seen: list[str] = []
    page = await sdk.list_api_keys(page_size=2)
    while True:
        seen += [k.api_key_id for k in page.items]
        if page.next_token is None:
            assert page.truncated is None
            break
        assert page.truncated is True
        page = await sdk.list_api_keys(page_size=2, starting_token=page.next_token)
    harness = harness_keys(sdk)
    assert sorted(set(seen) - harness_ids(seen, made)) == sorted(made) and len(seen) == 5 + harness
    assert len((await sdk.list_api_keys(max_items=3, page_size=1000)).items) == 3
    assert len((await sdk.list_api_keys(max_items=99999)).items) == 5 + harness  # clamped, not rejected
    with pytest.raises(ValidationError):
        await sdk.list_api_keys(page_size=0)


@pytest.mark.parametrize("token", ["garbage", "e30.AAAA", "", "x" * 300])
async def test_malformed_token_is_invalid_pagination_token(sdk: PluginSDK, token: str) -> None:
    with pytest.raises(InvalidPaginationToken) as exc:
        await sdk.list_api_keys(starting_token=token)
    assert exc.value.message == "Invalid pagination token" and exc.value.status == 400


async def test_token_of_another_listing_is_rejected(sdk: PluginSDK) -> None:
    for i in range(3):
        await sdk.create_api_key(api_key_name=f"t{i}", user_id="administrator", description="tokens")
    admin_token = (await sdk.list_api_keys(page_size=1)).next_token
    assert admin_token is not None
    with pytest.raises(InvalidPaginationToken):
        await sdk.list_my_api_keys(starting_token=admin_token)
    with pytest.raises(InvalidPaginationToken):
        await sdk.list_api_keys(user_id="administrator", starting_token=admin_token)
    with pytest.raises(InvalidPaginationToken):
        await sdk.list_constraints(starting_token=admin_token)
    mine = (await sdk.list_my_api_keys(page_size=1)).next_token
    assert mine is not None
    with pytest.raises(InvalidPaginationToken):
        await sdk.list_api_keys(starting_token=mine)


# -- self-service ---------------------------------------------------------------------
async def test_self_service_create_rules(sdk: PluginSDK) -> None:
    res = await sdk.create_my_api_key(api_key_name="mine", description="my own key", expires_at=_in(365 - 0.01))
    assert res.user_id == "administrator" and res.api_key.startswith("psdk_")
    with pytest.raises(ValidationError):
        await sdk.create_my_api_key(api_key_name="long", description="too long", expires_at=_in(366))
    with pytest.raises(ValidationError):
        await sdk.create_my_api_key(api_key_name="none", description="no expiry")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        await sdk.create_my_api_key(
            api_key_name="other", description="for someone else", expires_at=_in(1), user_id="bob"
        )


async def test_self_service_update_rules(sdk: PluginSDK) -> None:
    key = await sdk.create_my_api_key(api_key_name="m", description="mine", expires_at=_in(10))
    res = await sdk.update_my_api_key(key.api_key_id, expires_at=_in(300))
    assert res.expires_at is not None
    with pytest.raises(ValidationError):
        await sdk.update_my_api_key(key.api_key_id, expires_at=None)
    with pytest.raises(ValidationError):
        await sdk.update_my_api_key(key.api_key_id, expires_at=_in(366))
    res = await sdk.update_my_api_key(key.api_key_id, is_active="false")
    assert res.is_active == "false"


async def test_self_service_isolation(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("alice", ["basicReadOnly"])
    await sdk.create_user_roles("bob", ["basicReadOnly"])
    admin_key = await sdk.create_my_api_key(api_key_name="admin-own", description="admin key", expires_at=_in(5))
    async with acting_as(sdk, "alice", tmp_path) as alice, acting_as(sdk, "bob", tmp_path) as bob:
        a = await alice.create_my_api_key(api_key_name="a", description="alice key", expires_at=_in(5))
        b = await bob.create_my_api_key(api_key_name="b", description="bob key", expires_at=_in(5))
        assert a.user_id == "alice" and a.created_by == "alice"
        alice_ids = {k.api_key_id for k in (await alice.list_my_api_keys()).items}
        assert a.api_key_id in alice_ids and b.api_key_id not in alice_ids
        assert admin_key.api_key_id not in alice_ids
        for call in (
            alice.get_my_api_key(b.api_key_id),
            alice.update_my_api_key(b.api_key_id, is_active="false"),
            alice.delete_my_api_key(b.api_key_id),
        ):
            with pytest.raises(NotFoundError):
                await call
        assert (await bob.get_my_api_key(b.api_key_id)).is_active == "true"
        # the administrative routes are admin-only
        for admin_call in (
            alice.list_api_keys(),
            alice.get_api_key(b.api_key_id),
            alice.create_api_key(api_key_name="x", user_id="administrator", description="escalate"),
        ):
            with pytest.raises(PermissionDeniedError):
                await admin_call
        await alice.delete_my_api_key(a.api_key_id)
        with pytest.raises(NotFoundError):
            await alice.get_my_api_key(a.api_key_id)


# -- keys as credentials (engine level) ---------------------------------------------------
async def test_key_acts_as_its_user_with_that_users_roles(local_sdk: PluginSDK) -> None:
    sdk = local_sdk
    await sdk.create_user_roles("reader", ["basicReadOnly"])
    key = (await sdk.create_api_key(api_key_name="r", user_id="reader", description="reader key")).api_key
    principal = await authenticate(sdk, key)
    assert principal.user_id == "reader" and principal.auth_method == "api_key" and principal.mfa is False
    assert (await with_key(sdk, key, "list_templates")).templates == []
    with pytest.raises(PermissionDeniedError):
        await with_key(sdk, key, "list_roles")
    mine = await with_key(sdk, key, "list_my_api_keys")
    assert [k.user_id for k in mine.items] == ["reader"]


async def test_inactive_expired_deleted_keys_fail_on_the_next_call(local_sdk: PluginSDK) -> None:
    sdk = local_sdk
    key = await sdk.create_api_key(api_key_name="life", user_id="administrator", description="lifecycle")
    assert (await authenticate(sdk, key.api_key)).user_id == "administrator"
    await sdk.update_api_key(key.api_key_id, is_active="false")
    with pytest.raises(AuthenticationError):
        await authenticate(sdk, key.api_key)
    await sdk.update_api_key(key.api_key_id, is_active="true")
    assert (await authenticate(sdk, key.api_key)).api_key_id == key.api_key_id
    db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat(timespec="microseconds")
    await db.execute("UPDATE auth_api_keys SET expires_at = :p WHERE api_key_id = :i", {"p": past, "i": key.api_key_id})
    with pytest.raises(AuthenticationError):
        await authenticate(sdk, key.api_key)
    await sdk.update_api_key(key.api_key_id, expires_at=None)
    await authenticate(sdk, key.api_key)
    await sdk.delete_api_key(key.api_key_id)
    with pytest.raises(AuthenticationError):
        await authenticate(sdk, key.api_key)


@pytest.mark.parametrize("header", [None, "", "psdk_unknown", "Bearer", "Basic abc", "psdk_" + "A" * 43, "x" * 5000])
async def test_bad_credentials_are_401(local_sdk: PluginSDK, header: str | None) -> None:
    with pytest.raises(AuthenticationError) as exc:
        await authenticate(local_sdk, header)
    assert exc.value.status == 401 and exc.value.error_code == "UNAUTHENTICATED"


async def test_error_messages_never_echo_the_key(local_sdk: PluginSDK) -> None:
    secret = "psdk_" + "S3cr3t" * 8
    with pytest.raises(AuthenticationError) as exc:
        await authenticate(local_sdk, secret)
    assert secret not in str(exc.value.to_envelope())
