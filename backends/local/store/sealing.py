"""The sealing key: the AES key that seals TOTP seeds and signing keys in the store (and from which the
pagination secret is derived) lives apart from the store, so a copy of the database alone opens nothing.

Where the key comes from, first match wins:

1. `PLUGIN_SEAL_KEY` — the key itself, 32 bytes base64url (containers, secret managers);
2. `app.authProvider.secretsKey` in the configuration (the older setting, same format);
3. a key file, 0600: `PLUGIN_SEAL_KEY_FILE`, else `storage.seal_key_file`, else `<store file>.key` beside an
   SQLite store, else `<user data dir>/seal.key` for PostgreSQL. It is created on first start.

The store keeps a check value of the key (`seal.key_check` in `meta`, an HMAC of a constant), so a wrong
or lost key fails at start with a message instead of garbling secrets later. Stores made before the key
moved out kept it in `meta` (`auth.secrets_key`): the first start writes it to the key file (or re-seals
with the key from 1./2.) and deletes the row, in one transaction.

Rotation (`rotate`: `pluginsdk auth rotate-seal-key`, also `python -m backends.local.store.sealing rotate`)
is refused while any process holds the store (`seal_hold`: running processes keep the key in memory). The
new key is written to `<key file>.new` first, every sealed value is re-sealed and the audit record appended
in one transaction, then the file is renamed over the old one. A crash between commit and rename is
finished on the next start (the check value says which file is right).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pluginsdk.errors import ConfigurationError

from .db import Database
from .files import read_private, rename_durably, replace_private, write_private_once

if TYPE_CHECKING:
    from pluginsdk.config import Settings

__all__ = [
    "SEAL_KEY_ENV",
    "SEAL_KEY_FILE_ENV",
    "SealKey",
    "key_check",
    "key_file",
    "load_seal_key",
    "new_key_from_env",
    "rotate",
    "rotated_message",
]

SEAL_KEY_ENV = "PLUGIN_SEAL_KEY"
SEAL_KEY_FILE_ENV = "PLUGIN_SEAL_KEY_FILE"
NEW_KEY_ENV = "PLUGIN_SEAL_KEY_NEW"
"""Rotation with a key from the environment or configuration: the new key (we cannot write either)."""
LEGACY_ROW = "auth.secrets_key"
CHECK_ROW = "seal.key_check"
KEY_BYTES = 32

SEALED_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    # table, key column, sealed column, context prefix (the AEAD context is prefix + key)
    ("auth_users", "user_id", "totp_secret", "totp:"),
    ("auth_users", "user_id", "totp_pending", "totp:"),
    ("auth_signing_keys", "kid", "private_key", "signing-key:"),
    ("auth_federation_pending", "state_hash", "data", "federation:"),
)
"""Every value sealed with the key; rotation re-seals exactly these."""


class SealKey(NamedTuple):
    key: bytes
    source: str
    """Where it came from (an environment variable, a configuration key or the file's path), for messages."""
    path: Path | None
    """The key file, when the key lives in one."""


def encode_key(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).rstrip(b"=").decode("ascii")


def decode_key(text: str, source: str) -> bytes:
    raw = text.strip()
    try:
        key = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise ConfigurationError(
            f"The sealing key from {source} is not 32 bytes, base64url-encoded.",
            key="storage.seal_key_file",
            source=source,
        )
    return key


def key_check(key: bytes) -> str:
    """What the store keeps to recognise its key (an HMAC of a constant: it reveals nothing of the key)."""
    return hmac.new(key, b"pluginsdk/seal-key-check/v1", hashlib.sha256).hexdigest()[:32]


def key_file(settings: Settings) -> Path | None:
    """The key file for these settings; None for an in-memory store (its key lives as long as it does)."""
    if env := os.environ.get(SEAL_KEY_FILE_ENV):
        return Path(env).expanduser()
    if configured := settings.storage.seal_key_file:
        return Path(str(configured)).expanduser()
    target = settings.storage_target
    if target.startswith(("postgresql", "postgres:")):
        from pluginsdk.config import default_data_dir

        return default_data_dir() / "seal.key"
    if target.startswith("sqlite:"):
        target = target.split(":///", 1)[1] if ":///" in target else ":memory:"
    if target == ":memory:":
        return None
    return Path(f"{Path(target).expanduser()}.key")


def _pending(path: Path) -> Path:
    return path.with_name(path.name + ".new")


async def _meta(db: Database, key: str, *, lock: bool = False) -> str | None:
    suffix = " FOR UPDATE" if lock and db.dialect == "postgresql" else ""
    row = await db.fetchone(f"SELECT value FROM meta WHERE key = :k{suffix}", {"k": key})
    return str(row["value"]) if row else None


def _legacy_key(value: str) -> bytes:
    raw = value.strip()
    return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))[:KEY_BYTES]


def _explicit(configured: bytes | None) -> SealKey | None:
    if env := os.environ.get(SEAL_KEY_ENV):
        return SealKey(decode_key(env, SEAL_KEY_ENV), SEAL_KEY_ENV, None)
    if configured is not None:
        return SealKey(configured, "app.authProvider.secretsKey", None)
    return None


async def load_seal_key(settings: Settings, db: Database, configured: bytes | None = None) -> SealKey:
    """The store's sealing key, creating or migrating it on first use; ConfigurationError when the key
    found is not the one the store's secrets were sealed with."""
    chosen = _explicit(configured)
    check = await _meta(db, CHECK_ROW)
    if chosen is None:
        path = key_file(settings)
        if path is None:
            legacy = await _meta(db, LEGACY_ROW)
            chosen = SealKey(_legacy_key(legacy) if legacy else secrets.token_bytes(KEY_BYTES), "memory", None)
        else:
            chosen = await _from_file(db, path, check)
    if check is None:
        await _adopt(db, chosen, configured)
    elif not hmac.compare_digest(check, key_check(chosen.key)):
        raise _wrong_key(chosen)
    return chosen


async def _from_file(db: Database, path: Path, check: str | None) -> SealKey:
    pending = _pending(path)
    new = read_private(pending)
    if new is not None:  # a rotation stopped after its commit (new key is right) or before it (old is right)
        new_key = decode_key(new.decode("ascii"), str(pending))
        if check is not None and hmac.compare_digest(check, key_check(new_key)):
            os.replace(pending, path)
            return SealKey(new_key, str(path), path)
        if read_private(path) is not None:
            pending.unlink(missing_ok=True)
    data = read_private(path)
    if data is None:
        if check is not None:
            raise ConfigurationError(
                f"The sealing key file {path} is missing, and this store's secrets were sealed with a key: "
                "restore the file from your backup (or set PLUGIN_SEAL_KEY / PLUGIN_SEAL_KEY_FILE).",
                key="storage.seal_key_file",
                source=str(path),
            )
        legacy = await _meta(db, LEGACY_ROW)  # an older store: its key moves out of the database
        first = _legacy_key(legacy) if legacy else secrets.token_bytes(KEY_BYTES)
        data = write_private_once(path, (encode_key(first) + "\n").encode("ascii"))
    return SealKey(decode_key(data.decode("ascii"), str(path)), str(path), path)


async def _adopt(db: Database, chosen: SealKey, configured: bytes | None) -> None:
    """Record the key's check value; on a store from before the key moved out, re-seal with it if it
    differs from the key the store used (`configured` or the one in `meta`), then delete that row."""
    async with db.transaction():
        legacy = await _meta(db, LEGACY_ROW, lock=True)
        check = await _meta(db, CHECK_ROW)
        if check is not None:  # another process adopted meanwhile
            if not hmac.compare_digest(check, key_check(chosen.key)):
                raise _wrong_key(chosen)
            return
        if legacy is not None:
            old = configured or _legacy_key(legacy)
            if old != chosen.key:
                await reseal(db, old, chosen.key)
            await db.execute("DELETE FROM meta WHERE key = :k", {"k": LEGACY_ROW})
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (:k, :v) ON CONFLICT (key) DO NOTHING",
            {"k": CHECK_ROW, "v": key_check(chosen.key)},
        )
        stored = await _meta(db, CHECK_ROW)  # a process with another key may have been first
        if stored is None or not hmac.compare_digest(stored, key_check(chosen.key)):
            raise _wrong_key(chosen)


def _wrong_key(chosen: SealKey) -> ConfigurationError:
    return ConfigurationError(
        f"The sealing key from {chosen.source} is not the key this store's secrets were sealed with; "
        "use the right key file or PLUGIN_SEAL_KEY (see docs/auth.md, 'Secrets at rest').",
        key="storage.seal_key_file",
        source=chosen.source,
    )


async def reseal(db: Database, old: bytes, new: bytes) -> int:
    """Re-seal every sealed value from `old` to `new` (inside the caller's transaction); returns the count."""
    from backends.local.auth.crypto import SecretBox

    before, after = SecretBox(old), SecretBox(new)
    count = 0
    for table, key_col, col, prefix in SEALED_COLUMNS:
        rows = await db.fetchall(f"SELECT {key_col} AS k, {col} AS v FROM {table} WHERE {col} IS NOT NULL")
        for row in rows:
            context = prefix + str(row["k"])
            try:
                plain = before.open(str(row["v"]), context)
            except Exception:  # cryptography's InvalidTag: nothing is changed, and nothing is echoed
                raise ConfigurationError(
                    f"A value in {table}.{col} cannot be opened with the current sealing key; nothing was changed.",
                    key="storage.seal_key_file",
                ) from None
            await db.execute(
                f"UPDATE {table} SET {col} = :v WHERE {key_col} = :k",
                {"v": after.seal(plain, context), "k": row["k"]},
            )
            count += 1
    return count


async def rotate(settings: Settings, new_key: bytes | None = None, *, wait: float = 5.0) -> tuple[SealKey, int]:
    """Replace the store's sealing key; returns the new key's origin and how many values were re-sealed.

    Refused (ConfigurationError, nothing changed) while any process holds the store: running processes keep
    the key in memory (`seal_hold`); short CLI calls are waited for up to `wait` seconds. With a key from
    PLUGIN_SEAL_KEY or the configuration, pass the new key (PLUGIN_SEAL_KEY_NEW) and put it in place of the
    old one afterwards; with a key file, the file is replaced. The audit log records the rotation (action
    `rotate_seal_key`) in the transaction that re-seals.
    """
    from backends.local.auth.audit import operator
    from backends.local.auth.store import AuthStore

    from . import open_store
    from .seal_hold import hold_store

    store = await open_store(settings.storage_target)
    try:
        db = store.db
        hold = await hold_store(db, exclusive=True, wait=wait)
        try:
            current = await load_seal_key(settings, db, settings.app.authProvider.seal_key())
            if current.path is None and new_key is None:
                raise ConfigurationError(
                    f"The sealing key comes from {current.source}: give the new one in {NEW_KEY_ENV} "
                    "(32 bytes, base64url) and set it there after the rotation.",
                    key=NEW_KEY_ENV,
                )
            fresh = new_key or secrets.token_bytes(KEY_BYTES)
            if current.path is not None:
                replace_private(_pending(current.path), (encode_key(fresh) + "\n").encode("ascii"))
            async with db.transaction():
                count = await reseal(db, current.key, fresh)
                await db.execute("UPDATE meta SET value = :v WHERE key = :k", {"k": CHECK_ROW, "v": key_check(fresh)})
                where = str(current.path) if current.path is not None else NEW_KEY_ENV
                await AuthStore(db).append_audit(
                    actor=operator(),
                    action="rotate_seal_key",
                    target=("sealKey", "store"),
                    before={"keySource": current.source},
                    after={"keySource": where, "resealed": count},
                )
            if current.path is not None:
                rename_durably(_pending(current.path), current.path)
                return SealKey(fresh, str(current.path), current.path), count
            return SealKey(fresh, NEW_KEY_ENV, None), count
        finally:
            await hold.release()
    finally:
        await store.aclose()


def main(argv: list[str] | None = None) -> int:
    """`python -m backends.local.store.sealing rotate [--config FILE]`: the same as `pluginsdk auth
    rotate-seal-key` (needs local access to the store and its key; no network call)."""
    import argparse
    import asyncio
    import sys

    from pluginsdk.config import load_settings

    parser = argparse.ArgumentParser(prog="python -m backends.local.store.sealing", description=main.__doc__)
    parser.add_argument("action", choices=["rotate"])
    parser.add_argument("--config", help="configuration file (default: PLUGIN_CONFIG)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings(config_path=args.config)
        key, count = asyncio.run(rotate(settings, new_key_from_env()))
    except ConfigurationError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return 2
    print(rotated_message(key, count))
    return 0


def new_key_from_env() -> bytes | None:
    """The new key given in PLUGIN_SEAL_KEY_NEW, if any."""
    new = os.environ.get(NEW_KEY_ENV)
    return decode_key(new, NEW_KEY_ENV) if new else None


def rotated_message(key: SealKey, count: int) -> str:
    where = f"written to {key.path}" if key.path else f"now set {NEW_KEY_ENV}'s value as {SEAL_KEY_ENV}"
    return f"Sealing key rotated: {count} sealed value(s) re-sealed; new key {where}."


if __name__ == "__main__":
    raise SystemExit(main())
