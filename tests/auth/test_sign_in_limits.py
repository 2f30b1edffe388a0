"""Sign-in resists guessing: failed passwords and TOTP codes lock the account name (and the client) for a
while, the lock is shared through the store and audited, and password hashing is bounded (429 at once)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pyotp
import pytest

from pluginsdk import AuthenticationError, PluginSDK, TooManyRequestsError
from tests.auth.conftest import Mailbox, authenticate, call_as, managed_app
from tests.support.backends import base_config, open_sdk, open_sdk_on

PASSWORD = "Correct-Horse-9-Battery"
LOCK = 1.5


def limited(mailbox: Mailbox, **limits: Any) -> dict[str, Any]:
    app = managed_app(mailbox)
    values = {"accountFailures": 3, "clientFailures": 100, "failureWindowSeconds": 60, "lockSeconds": LOCK} | limits
    app["authProvider"]["useManaged"]["signInLimits"] = values
    return app


@pytest.fixture
async def pool(backend_kind: str, tmp_path: Path, mailbox: Mailbox) -> AsyncIterator[PluginSDK]:
    async with open_sdk(backend_kind, tmp_path, app=limited(mailbox)) as sdk:
        yield sdk


async def new_user(sdk: PluginSDK, mailbox: Mailbox, user_id: str) -> None:
    await sdk.create_managed_user(user_id=user_id, email=f"{user_id}@example.com")
    await sdk.create_user_roles(user_id, ["basicReadOnly"])
    assert (await sdk.login(user_id, mailbox.temporary_password(), new_password=PASSWORD)).id_token


async def locked_out(sdk: PluginSDK, user_id: str, password: str = PASSWORD, **kw: Any) -> TooManyRequestsError:
    with pytest.raises(TooManyRequestsError) as refused:
        await sdk.login(user_id, password, **kw)
    err = refused.value
    assert err.status == 429 and err.code == "TOO_MANY_REQUESTS" and 1 <= err.retry_after <= 2
    return err


async def test_wrong_passwords_lock_the_account_until_the_lock_expires(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "gus")
    for _ in range(3):
        with pytest.raises(AuthenticationError):
            await pool.login("gus", "Wrong-Password-1")
    await locked_out(pool, "gus")  # the right password, refused while locked
    await asyncio.sleep(LOCK + 0.1)
    assert (await pool.login("gus", PASSWORD)).id_token
    records = (await pool.list_audit_records(action="sign_in_locked")).records
    assert [(r.target_type, r.target_id) for r in records] == [("managedUser", "gus")]
    assert records[0].after["failures"] == 3 and records[0].after["kind"] == "password"
    assert PASSWORD not in str(records[0].model_dump())


async def test_an_unknown_name_locks_exactly_like_a_known_one(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "hal")
    known, unknown = [], []
    for name, seen in (("hal", known), ("nobody", unknown)):
        for _ in range(3):
            with pytest.raises(AuthenticationError) as wrong:
                await pool.login(name, "Wrong-Password-1")
            seen.append((wrong.value.status, wrong.value.code, wrong.value.message))
        err = await locked_out(pool, name, "Wrong-Password-1")
        seen.append((err.status, err.code, err.message.split(";")[0]))
    assert known == unknown


async def test_a_success_starts_the_count_again(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "ida")
    for _ in range(2):
        for _ in range(2):
            with pytest.raises(AuthenticationError):
                await pool.login("ida", "Wrong-Password-1")
        assert (await pool.login("ida", PASSWORD)).id_token


async def test_wrong_totp_codes_lock_the_account(pool: PluginSDK, mailbox: Mailbox) -> None:
    await new_user(pool, mailbox, "joe")
    tokens = await pool.login("joe", PASSWORD)
    assert tokens.id_token
    totp = await _enrol(pool, tokens.id_token)
    wrong = f"{(int(totp.now()) + 500000) % 1000000:06d}"
    for _ in range(3):
        with pytest.raises(AuthenticationError):
            await pool.login("joe", PASSWORD, totp_code=wrong)
    await locked_out(pool, "joe", totp_code=totp.now())  # password and code right, refused while locked
    await asyncio.sleep(LOCK + 0.1)
    assert (await pool.login("joe", PASSWORD, totp_code=totp.at(time.time() + 30))).mfa
    records = (await pool.list_audit_records(action="sign_in_locked", target_id="joe")).records
    assert len(records) == 1 and records[0].after["kind"] == "totp"


async def _enrol(sdk: PluginSDK, id_token: str) -> pyotp.TOTP:
    if sdk.backend.name == "remote":
        async with PluginSDK(backend="remote", api_url=sdk.settings.api.url, config={"api": {"token": id_token}}) as me:
            totp = pyotp.TOTP((await me.setup_mfa()).secret_code)
            await me.verify_mfa(code=totp.at(time.time() - 30))
            return totp
    p = await authenticate(sdk, f"Bearer {id_token}")
    totp = pyotp.TOTP((await call_as(sdk, p, "setup_mfa")).secret_code)
    await call_as(sdk, p, "verify_mfa", code=totp.at(time.time() - 30))
    return totp


async def test_a_session_cannot_guess_the_enrolled_code(pool: PluginSDK, mailbox: Mailbox) -> None:
    """Re-enrolment with `code` counts wrong codes like sign-in does."""
    await new_user(pool, mailbox, "kim")
    plain = await pool.login("kim", PASSWORD)
    mfa = await pool.login("kim", PASSWORD)
    assert plain.id_token and mfa.id_token
    totp = await _enrol(pool, mfa.id_token)
    wrong = f"{(int(totp.now()) + 500000) % 1000000:06d}"
    p = await authenticate(pool, f"Bearer {plain.id_token}") if pool.backend.name == "local" else None
    for attempt in range(4):
        try:
            if p is not None:
                await call_as(pool, p, "setup_mfa", code=wrong if attempt < 3 else totp.now())
            else:
                async with PluginSDK(
                    backend="remote", api_url=pool.settings.api.url, config={"api": {"token": plain.id_token}}
                ) as me:
                    await me.setup_mfa(code=wrong if attempt < 3 else totp.now())
        except TooManyRequestsError:
            assert attempt == 3
        except Exception as exc:
            assert attempt < 3 and exc.status == 403  # type: ignore[attr-defined]
        else:
            raise AssertionError("a guessed code was accepted")


async def test_the_client_is_limited_across_names(tmp_path: Path, mailbox: Mailbox) -> None:
    """One client spraying many names is locked too (the server counts per peer address)."""
    app = limited(mailbox, accountFailures=100, clientFailures=4)
    async with open_sdk("remote", tmp_path, app=app) as sdk:
        for i in range(4):
            with pytest.raises(AuthenticationError):
                await sdk.login(f"name{i}", "Wrong-Password-1")
        await locked_out(sdk, "someone-else", "Wrong-Password-1")
        records = (await sdk.list_audit_records(action="sign_in_locked")).records
        assert [r.target_type for r in records] == ["client"] and records[0].target_id == "127.0.0.1"


async def _shared_lock(config: dict[str, Any], tmp_path: Path, mailbox: Mailbox) -> None:
    """Failures counted by one engine lock the account for another engine on the same store."""
    async with open_sdk_on("local", config, tmp_path) as one, open_sdk_on("local", config, tmp_path) as two:
        await new_user(one, mailbox, "lea")
        for sdk in (one, two, one):
            with pytest.raises(AuthenticationError):
                await sdk.login("lea", "Wrong-Password-1")
        await locked_out(two, "lea")
        await locked_out(one, "lea")


async def test_engines_sharing_a_sqlite_store_share_the_lock(tmp_path: Path, mailbox: Mailbox) -> None:
    await _shared_lock(base_config(tmp_path, app=limited(mailbox)), tmp_path, mailbox)


async def test_engines_sharing_postgresql_share_the_lock(pg_url: str, tmp_path: Path, mailbox: Mailbox) -> None:
    config = base_config(tmp_path, app=limited(mailbox))
    config["storage"] = {"type": "postgresql", "url": pg_url, "seal_key_file": str(tmp_path / "seal.key")}
    await _shared_lock(config, tmp_path, mailbox)


async def test_logins_beyond_the_hashing_bound_are_refused_at_once(tmp_path: Path, mailbox: Mailbox) -> None:
    """With one hash at a time and one waiting, a burst of sign-ins gets 429 with Retry-After at once."""
    app = limited(mailbox, accountFailures=1000, clientFailures=1000)
    app["authProvider"]["useManaged"]["passwordHashing"] = {
        "timeCost": 2,
        "memoryKib": 32768,
        "parallelism": 1,
        "concurrency": 1,
        "queue": 1,
    }
    async with open_sdk("remote", tmp_path, app=app) as sdk:
        url = sdk.settings.api.url.rstrip("/")
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:

            async def attempt(i: int) -> tuple[int, float, httpx.Response]:
                started = time.perf_counter()
                r = await c.post("/auth/login", json={"username": f"user{i:03d}", "password": "Wrong-Password-1"})
                return r.status_code, time.perf_counter() - started, r

            results = await asyncio.gather(*(attempt(i) for i in range(12)))
        statuses = sorted(s for s, _, _ in results)
        assert statuses.count(401) >= 2 and statuses.count(429) >= 6, statuses
        assert set(statuses) <= {401, 429}
        slowest_hash = max(t for s, t, _ in results if s == 401)
        for status, seconds, r in results:
            if status == 429:
                assert r.headers["retry-after"] == "1" and r.headers["x-request-id"]
                body = r.json()
                assert body["success"] is False and body["error_code"] == "TOO_MANY_REQUESTS"
                assert body["details"]["retry_after"] == 1
                assert seconds <= slowest_hash  # answered without waiting for a hash
