"""Logs carry no SQL parameters, hashes or secrets, at any level.

Every logger (asyncpg, uvicorn, ours) is captured at DEBUG while a session
creates users with passwords, API keys, TOTP and sessions, and runs into unique-key races and database
errors; none of the secrets, their hashes, or values that only ever travel as SQL parameters may appear.
"""

from __future__ import annotations

import asyncio
import logging
import secrets as secrets_module
import time
import traceback
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyotp
import pytest

from pluginsdk import AlreadyExistsError, PluginSDK, SDKError
from tests.auth.conftest import Mailbox, authenticate, call_as, managed_app
from tests.auth.test_totp_once import as_session
from tests.support.backends import open_sdk
from tests.support.postgres import fresh_database

PASSWORD = "Correct-Horse-9-Battery"
EMAIL = "param-marker-7f3a9c@example.com"
"""Travels only as an SQL parameter (and in the response): never in a log line."""
DESCRIPTION = "descmarker-51c0de key"


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("mail.log"):  # the test's own SMTP server (it receives the mail by design)
            return
        self.lines.append(self.format(record))  # the formatter appends any traceback

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@contextmanager
def every_log() -> Iterator[tuple[Everything, Any]]:
    """A handler on the root and on every logger known so far, all at DEBUG; `sweep()` covers new ones."""
    handler = Everything()
    touched: dict[logging.Logger, int] = {}

    def sweep() -> None:
        loggers = [logging.getLogger()] + [
            lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)
        ]
        for lg in loggers:
            if lg not in touched:
                touched[lg] = lg.level
                lg.addHandler(handler)
            lg.setLevel(logging.DEBUG)

    sweep()
    try:
        yield handler, sweep
    finally:
        for lg, level in touched.items():
            lg.removeHandler(handler)
            lg.setLevel(level)


async def session(sdk: PluginSDK, mailbox: Mailbox) -> list[str]:
    """Users, passwords, API keys, TOTP, refresh, races; returns every secret and parameter-only value seen."""
    secrets: list[str] = [EMAIL, DESCRIPTION]
    await sdk.create_managed_user(user_id="lena", email=EMAIL)
    await sdk.create_user_roles("lena", ["basicReadOnly"])
    temporary = mailbox.temporary_password()
    tokens = await sdk.login("lena", temporary, new_password=PASSWORD)
    assert tokens.id_token and tokens.refresh_token
    secrets += [temporary, PASSWORD, tokens.id_token, tokens.refresh_token, tokens.access_token or tokens.id_token]
    with pytest.raises(SDKError):
        await sdk.login("lena", "Wrong-Password-77")
    if sdk.backend.name == "remote":
        async with as_session(sdk, tokens.id_token) as me:
            setup = await me.setup_mfa()
            totp = pyotp.TOTP(setup.secret_code)
            enabling = totp.now()
            await me.verify_mfa(code=enabling)
    else:
        principal = await authenticate(sdk, f"Bearer {tokens.id_token}")
        setup = await call_as(sdk, principal, "setup_mfa")
        totp = pyotp.TOTP(setup.secret_code)
        enabling = totp.now()
        await call_as(sdk, principal, "verify_mfa", code=enabling)
    secrets += [setup.secret_code, setup.otpauth_uri]
    with pytest.raises(SDKError):  # the enabling code replayed
        await sdk.login("lena", PASSWORD, totp_code=enabling)
    mfa = await sdk.login("lena", PASSWORD, totp_code=totp.at(time.time() + 30))
    assert mfa.id_token and mfa.refresh_token
    secrets += [mfa.id_token, mfa.refresh_token]
    refreshed = await sdk.refresh_tokens(refresh_token=mfa.refresh_token)
    assert refreshed.id_token
    secrets.append(refreshed.id_token)
    keys = await asyncio.gather(
        *(sdk.create_api_key(api_key_name="race-key", user_id="lena", description=DESCRIPTION) for _ in range(3)),
        return_exceptions=True,
    )
    created = [k for k in keys if not isinstance(k, BaseException)]
    assert len(created) == 1 and all(isinstance(k, AlreadyExistsError) for k in keys if k not in created), keys
    secrets.append(created[0].api_key)
    own = await sdk.create_api_key(api_key_name="second", user_id="lena", description=DESCRIPTION)
    secrets.append(own.api_key)
    return secrets


async def stored_secrets(sdk: PluginSDK, store: dict[str, Any]) -> list[str]:
    """Hashes and sealed values as the store holds them, and the sealing key file's content."""
    async with PluginSDK(config=store) as local:
        db = local.backend.engine.store.db  # type: ignore[attr-defined]
        users = await db.fetchall("SELECT password_hash, totp_secret FROM auth_users WHERE user_id = 'lena'")
        hashes = await db.fetchall("SELECT key_hash FROM auth_api_keys")
        sessions = await db.fetchall("SELECT refresh_hash FROM auth_sessions")
        salt = await db.fetchone("SELECT value FROM meta WHERE key = 'auth.page_secret'")
    out = [u["password_hash"] for u in users] + [u["totp_secret"] for u in users]
    out += [h["key_hash"] for h in hashes] + [s["refresh_hash"] for s in sessions]
    out += [str(salt["value"])] if salt else []
    key_file = store["storage"].get("seal_key_file") or store["storage"]["path"] + ".key"
    out.append(Path(key_file).read_text().strip())
    return [s for s in out if s]


def assert_clean(text: str, secrets: list[str]) -> None:
    assert text, "nothing was logged: the capture is broken"
    for s in secrets:
        assert s not in text, f"a secret or parameter value ({s[:6]}...) is in the logs"


@pytest.fixture
async def pool(backend_kind: str, tmp_path: Path, mailbox: Mailbox) -> AsyncIterator[PluginSDK]:
    async with open_sdk(backend_kind, tmp_path, app=managed_app(mailbox)) as sdk:
        yield sdk


async def test_a_session_logs_no_secret_on_sqlite(pool: PluginSDK, mailbox: Mailbox, tmp_path: Path) -> None:
    with every_log() as (logs, sweep):
        sweep()
        secrets = await session(pool, mailbox)
        logging.getLogger("pluginsdk.test").debug("capture works")
    store = {"storage": {"path": str(tmp_path / "store.db")}, "app": managed_app(mailbox)}
    assert_clean(logs.text, secrets + await stored_secrets(pool, store))


@pytest.mark.postgres
async def test_a_session_logs_no_secret_on_postgres(tmp_path: Path, mailbox: Mailbox) -> None:
    async with fresh_database() as url:
        storage = {"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")}
        with every_log() as (logs, sweep):
            async with open_sdk("local", tmp_path, storage=storage, app=managed_app(mailbox)) as sdk:
                sweep()  # asyncpg's loggers exist now: their INFO/DEBUG lines are captured too
                secrets = await session(sdk, mailbox)
                db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
                marker = "cast-marker-" + secrets_module.token_hex(4)  # not in this file's source (tracebacks)
                with pytest.raises(Exception) as failed:  # a driver error whose own text quotes the value
                    await db.execute("SELECT CAST(:v AS INTEGER) AS n", {"v": marker})
                logging.getLogger("pluginsdk.test").exception("store failure", exc_info=failed.value)
        assert "store failure" in logs.text  # the driver error was logged (with its traceback) at DEBUG
        text = logs.text + "\n" + "".join(traceback.format_exception(failed.value))
        store = {"storage": storage, "app": managed_app(mailbox)}
        assert_clean(text, [*secrets, marker, *await stored_secrets(sdk, store)])
