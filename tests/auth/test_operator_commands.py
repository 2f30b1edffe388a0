"""Operator commands leave a trace and cannot corrupt: break-glass and sealing-key rotation are in the audit
log, and rotation is refused while a server holds the store (it would keep sealing with the retired key),
so MFA set-ups and sign-ins work before and after, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from pluginsdk.errors import ConfigurationError
from tests.auth.conftest import Mailbox, managed_app
from tests.auth.test_totp_once import PASSWORD, enrolled
from tests.support.backends import base_config
from tests.support.cli import Result, clean_environment, run
from tests.support.remote import admin_key, running_server


def cli(cfg_file: Path, *args: str) -> Result:
    """An operator's command as its own process, beside the server process that may hold the store."""
    return run(clean_environment(), "--config", str(cfg_file), *args)


@asynccontextmanager
async def serving(cfg: dict[str, Any], name: str) -> AsyncIterator[PluginSDK]:
    """A real server on the store, and a remote SDK acting as the administrator through it."""
    key = await admin_key(cfg, name)
    with running_server(cfg) as url:
        async with PluginSDK(backend="remote", api_url=url, api_key=key, config=cfg) as sdk:
            yield sdk


@pytest.fixture(params=["sqlite", "postgresql"])
def cfg(request: pytest.FixtureRequest, tmp_path: Path, mailbox: Mailbox) -> dict[str, Any]:
    storage = {"path": str(tmp_path / "store.db"), "seal_key_file": str(tmp_path / "seal.key")}
    if request.param == "postgresql":
        storage = {
            "type": "postgresql",
            "url": request.getfixturevalue("pg_url"),
            "seal_key_file": storage["seal_key_file"],
        }
    return base_config(tmp_path, storage=storage, app=managed_app(mailbox))


async def test_rotation_is_refused_while_a_server_runs_and_mfa_works_throughout(
    cfg: dict[str, Any], tmp_path: Path, mailbox: Mailbox
) -> None:
    cfg_file = tmp_path / "config.json"
    cfg_file.write_text(json.dumps(cfg))
    key_file = tmp_path / "seal.key"
    async with serving(cfg, "first") as server:
        gus, _ = await enrolled(server, mailbox, "gus", tmp_path)
        before = key_file.read_text()
        refused = cli(cfg_file, "auth", "rotate-seal-key", "--wait", "0.2")
        assert refused.code == 1 and "stop them, then rotate" in refused.out, refused.out + refused.err
        assert key_file.read_text() == before  # nothing changed
        assert (await server.login("gus", PASSWORD, totp_code=gus.at(time.time() + 30))).mfa is True
        ida, _ = await enrolled(server, mailbox, "ida", tmp_path)  # a new seed, sealed with the key in force

    rotated = cli(cfg_file, "auth", "rotate-seal-key")
    assert rotated.code == 0, rotated.out + rotated.err
    assert json.loads(rotated.out)["resealed"] >= 3 and key_file.read_text() != before
    assert before.strip() not in rotated.out + rotated.err

    async with serving(cfg, "second") as server:  # the restarted server: every seed opens with the new key
        assert (await server.login("ida", PASSWORD, totp_code=ida.at(time.time() + 30))).mfa is True
        jon, _ = await enrolled(server, mailbox, "jon", tmp_path)
        assert (await server.login("jon", PASSWORD, totp_code=jon.at(time.time() + 30))).mfa is True
        glass = cli(cfg_file, "auth", "break-glass", "--user", "alice")  # beside a running server: allowed
        assert glass.code == 0, glass.out + glass.err
        records = {r.action: r for r in (await server.list_audit_records(target_type="sealKey")).records}
        records |= {r.action: r for r in (await server.list_audit_records(action="break_glass")).records}
    assert set(records) == {"rotate_seal_key", "break_glass"}
    assert all(r.actor.startswith("operator:") for r in records.values())
    assert records["break_glass"].target_id == "alice" and "admin" in json.dumps(records["break_glass"].after)
    assert records["rotate_seal_key"].after["resealed"] >= 3  # type: ignore[index]
    assert before.strip() not in json.dumps([r.to_dict() for r in records.values()])


async def test_a_process_starting_during_a_rotation_waits_and_loads_the_new_key(cfg: dict[str, Any]) -> None:
    from backends.local.store import open_store
    from backends.local.store.seal_hold import hold_store

    async with PluginSDK(config=cfg):
        pass  # the store and its key exist
    store = await open_store(str(cfg["storage"].get("url") or cfg["storage"]["path"]))
    try:
        hold = await hold_store(store.db, exclusive=True, wait=1)  # as a rotation does
        with pytest.raises(ConfigurationError, match="did not end in time"):
            import asyncio

            from backends.local.engine import Engine
            from pluginsdk.config import load_settings

            engine = Engine(load_settings(config=cfg, environ={}))
            try:
                await asyncio.wait_for(_start_with(engine, wait=0.2), 10)
            finally:
                await engine.aclose()
        await hold.release()
        async with PluginSDK(config=cfg) as sdk:  # the rotation is over: starts at once
            assert (await sdk.get_system_status()).version
    finally:
        await store.aclose()


async def _start_with(engine: Any, wait: float) -> None:
    """Start `engine` with a short wait for the store's lock (the engine's own is 30 s)."""
    import backends.local.auth as auth

    original = auth.hold_store

    async def short(db: Any, *, exclusive: bool, wait_: float = wait, **_: Any) -> Any:
        return await original(db, exclusive=exclusive, wait=wait_)

    auth.hold_store = short  # type: ignore[assignment]
    try:
        await engine.start()
    finally:
        auth.hold_store = original


def test_operator_commands_come_through_the_backend_contract() -> None:
    """The CLI finds them on the backend class by name (`pluginsdk.backend`); a backend without a store has none."""
    from pluginsdk.backend import StoreOperator, backend_class, store_operator

    local = store_operator()
    assert local is backend_class("local") and isinstance(local, StoreOperator)
    with pytest.raises(ConfigurationError, match="no operator commands"):
        store_operator("remote")
