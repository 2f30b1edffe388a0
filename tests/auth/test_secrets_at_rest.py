"""Secrets at rest: the store and its -wal/-shm are owner-only, and the key that seals
TOTP seeds and signing keys lives apart from the store (key file, PLUGIN_SEAL_KEY), with migration of
older stores that kept it inside, rotation, and a clear failure when the key is wrong or missing."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from backends.local.store.sealing import encode_key
from pluginsdk import AuthenticationError, ConfigurationError, PluginSDK
from tests.auth.conftest import Mailbox, managed_app
from tests.auth.test_totp_once import PASSWORD, enrolled
from tests.support.backends import base_config

ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def config(store: Path, mailbox: Mailbox) -> dict[str, Any]:
    return base_config(store.parent, storage={"path": str(store)}, app=managed_app(mailbox))


async def sign_in(cfg: dict[str, Any], user: str, code: str) -> bool:
    async with PluginSDK(config=cfg) as sdk:
        tokens = await sdk.login(user, PASSWORD, totp_code=code)
        return bool(tokens.mfa and tokens.id_token)


async def meta(cfg: dict[str, Any], key: str) -> str | None:
    async with PluginSDK(config=cfg) as sdk:
        row = await sdk.backend.engine.store.db.fetchone("SELECT value FROM meta WHERE key = :k", {"k": key})  # type: ignore[attr-defined]
        return str(row["value"]) if row else None


async def test_store_files_and_key_file_are_owner_only(tmp_path: Path, mailbox: Mailbox) -> None:
    store = tmp_path / "new" / "deeper" / "store.db"
    cfg = config(store, mailbox)
    old = os.umask(0o022)  # a usual umask: without care files would be world-readable
    try:
        async with PluginSDK(config=cfg) as sdk:
            await enrolled(sdk, mailbox, "gus", tmp_path)  # writes go through the WAL
            for p in (store, Path(f"{store}-wal"), Path(f"{store}-shm"), Path(f"{store}.key")):
                assert p.exists() and mode(p) == 0o600, (p, oct(mode(p)))
    finally:
        os.umask(old)
    assert mode(store.parent) == 0o700 and mode(store.parent.parent) == 0o700  # directories we created


async def test_an_existing_world_readable_store_is_tightened(tmp_path: Path, mailbox: Mailbox) -> None:
    store = tmp_path / "store.db"
    async with PluginSDK(config=config(store, mailbox)):
        pass
    store.chmod(0o644)
    async with PluginSDK(config=config(store, mailbox)):
        assert mode(store) == 0o600


async def test_the_key_is_not_in_the_store(tmp_path: Path, mailbox: Mailbox) -> None:
    store = tmp_path / "store.db"
    cfg = config(store, mailbox)
    async with PluginSDK(config=cfg) as sdk:
        totp, _ = await enrolled(sdk, mailbox, "gus", tmp_path)
    key = Path(f"{store}.key").read_text().strip()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("store.db*") if not p.name.endswith(".key"))
    assert key.encode() not in raw and await meta(cfg, "auth.secrets_key") is None
    # a copy of the database alone opens nothing: the start fails closed, naming the missing key file
    copy = tmp_path / "copy" / "store.db"
    copy.parent.mkdir()
    shutil.copy(store, copy)
    with pytest.raises(ConfigurationError) as missing:
        async with PluginSDK(config=config(copy, mailbox)):
            pass
    assert "missing" in missing.value.message and key not in missing.value.message
    # with the key file beside it, it works
    shutil.copy(f"{store}.key", f"{copy}.key")
    assert await sign_in(config(copy, mailbox), "gus", totp.at(time.time() + 30))


async def test_a_wrong_key_fails_at_start(tmp_path: Path, mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store.db"
    async with PluginSDK(config=config(store, mailbox)) as sdk:
        await enrolled(sdk, mailbox, "gus", tmp_path)
    wrong = encode_key(secrets.token_bytes(32))
    monkeypatch.setenv("PLUGIN_SEAL_KEY", wrong)
    with pytest.raises(ConfigurationError) as exc:
        async with PluginSDK(config=config(store, mailbox)):
            pass
    assert "PLUGIN_SEAL_KEY" in exc.value.message and wrong not in str(exc.value.to_envelope())
    monkeypatch.setenv("PLUGIN_SEAL_KEY", Path(f"{store}.key").read_text().strip())  # the right one, by env
    async with PluginSDK(config=config(store, mailbox)):
        pass


async def _make_legacy(cfg: dict[str, Any], store: Path) -> bytes:
    """Turn the store into one from before the key moved out: the key in `meta`, no key file."""
    key_file = Path(f"{store}.key")
    key = key_file.read_text().strip()
    async with PluginSDK(config=cfg) as sdk:
        db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
        await db.execute("DELETE FROM meta WHERE key = 'seal.key_check'")
        await db.execute("INSERT INTO meta (key, value) VALUES ('auth.secrets_key', :v)", {"v": key})
    key_file.unlink()
    return key.encode()


async def test_a_store_holding_its_key_is_migrated_to_a_key_file(tmp_path: Path, mailbox: Mailbox) -> None:
    store = tmp_path / "store.db"
    cfg = config(store, mailbox)
    async with PluginSDK(config=cfg) as sdk:
        totp, _ = await enrolled(sdk, mailbox, "gus", tmp_path)
        old_token = (await sdk.login("gus", PASSWORD, totp_code=totp.at(time.time() + 30))).id_token
    legacy = await _make_legacy(cfg, store)
    async with PluginSDK(config=cfg) as sdk:  # transparently: the same key, now in the file
        assert Path(f"{store}.key").read_bytes().strip() == legacy and mode(Path(f"{store}.key")) == 0o600
        assert (await sdk.list_templates()) is not None
        from tests.auth.conftest import authenticate

        assert (await authenticate(sdk, f"Bearer {old_token}")).user_id == "gus"  # signing keys still open
    assert await meta(cfg, "auth.secrets_key") is None


async def test_a_legacy_store_with_a_new_env_key_is_resealed(
    tmp_path: Path, mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store.db"
    cfg = config(store, mailbox)
    async with PluginSDK(config=cfg) as sdk:
        totp, _ = await enrolled(sdk, mailbox, "gus", tmp_path)
    await _make_legacy(cfg, store)
    monkeypatch.setenv("PLUGIN_SEAL_KEY", encode_key(secrets.token_bytes(32)))
    assert await sign_in(cfg, "gus", totp.at(time.time() + 30))  # the TOTP seed was re-sealed with the new key
    assert not Path(f"{store}.key").exists() and await meta(cfg, "auth.secrets_key") is None


async def test_rotation_by_command_reseals_everything(tmp_path: Path, mailbox: Mailbox) -> None:
    store = tmp_path / "store.db"
    cfg = config(store, mailbox)
    async with PluginSDK(config=cfg) as sdk:
        totp, _ = await enrolled(sdk, mailbox, "gus", tmp_path)
        used = totp.at(time.time() + 30)
        old_token = (await sdk.login("gus", PASSWORD, totp_code=used)).id_token
    key_file = Path(f"{store}.key")
    before = key_file.read_text()
    cfg_file = tmp_path / "config.json"
    cfg_file.write_text(json.dumps(cfg))
    done = subprocess.run(
        [sys.executable, "-m", "backends.local.auth.seal_rotation", "rotate", "--config", str(cfg_file)],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "re-sealed" in done.stdout and key_file.read_text() != before and mode(key_file) == 0o600
    assert before.strip() not in done.stdout + done.stderr
    async with PluginSDK(config=cfg) as sdk:
        from tests.auth.conftest import authenticate

        assert (await authenticate(sdk, f"Bearer {old_token}")).user_id == "gus"  # same signing keys, re-sealed
        with pytest.raises(AuthenticationError):  # replay protection survives rotation
            await sdk.login("gus", PASSWORD, totp_code=used)
    # the old key no longer opens the store
    key_file.write_text(before)
    with pytest.raises(ConfigurationError):
        async with PluginSDK(config=cfg):
            pass


async def test_an_interrupted_rotation_is_finished_or_undone(tmp_path: Path, mailbox: Mailbox) -> None:
    from backends.local.auth.seal_rotation import rotate
    from pluginsdk.config import load_settings

    store = tmp_path / "store.db"
    cfg = config(store, mailbox)
    async with PluginSDK(config=cfg) as sdk:
        await enrolled(sdk, mailbox, "gus", tmp_path)
    key_file, pending = Path(f"{store}.key"), Path(f"{store}.key.new")
    old = key_file.read_text()
    # stopped before its commit: a stray .new is dropped, the old key stays
    pending.write_text(encode_key(secrets.token_bytes(32)) + "\n")
    async with PluginSDK(config=cfg):
        pass
    assert not pending.exists() and key_file.read_text() == old
    # stopped after its commit, before the rename: the next start finishes it
    await rotate(load_settings(config=cfg, environ={}))
    new = key_file.read_text()
    key_file.write_text(old)
    pending.write_text(new)
    async with PluginSDK(config=cfg):
        pass
    assert key_file.read_text() == new and not pending.exists()


async def test_the_key_file_can_live_elsewhere(
    tmp_path: Path, mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store.db"
    elsewhere = tmp_path / "keys" / "pluginsdk.key"
    monkeypatch.setenv("PLUGIN_SEAL_KEY_FILE", str(elsewhere))
    async with PluginSDK(config=config(store, mailbox)) as sdk:
        totp, _ = await enrolled(sdk, mailbox, "gus", tmp_path)
    assert elsewhere.exists() and mode(elsewhere) == 0o600 and mode(elsewhere.parent) == 0o700
    assert not Path(f"{store}.key").exists()
    elsewhere.chmod(0o644)
    assert await sign_in(config(store, mailbox), "gus", totp.at(time.time() + 30))
    assert mode(elsewhere) == 0o600  # a key file others could read is tightened when read
