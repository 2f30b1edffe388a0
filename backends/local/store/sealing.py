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

Rotation (`pluginsdk auth rotate-seal-key`) is the auth service's operator command
(`backends/local/auth/seal_rotation.py`); it re-seals through `reseal` and records the new key with
`set_key_check`. `SecretBox` is the AEAD that seals and opens the values, here because the store owns what it
keeps at rest (the auth service seals with it too).
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
from .files import read_private, write_private_once

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from pluginsdk.config import Settings

__all__ = [
    "NEW_KEY_ENV",
    "SEAL_KEY_ENV",
    "SEAL_KEY_FILE_ENV",
    "SealKey",
    "SecretBox",
    "decode_key",
    "encode_key",
    "key_check",
    "key_file",
    "load_seal_key",
    "pending_key_file",
    "reseal",
    "set_key_check",
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


def pending_key_file(path: Path) -> Path:
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
    pending = pending_key_file(path)
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


class SecretBox:
    """AES-256-GCM for secrets that must be read back (TOTP seeds, signing keys)."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._cipher: AESGCM | None = None
        self._retired = False

    def retire(self) -> None:
        """The key was rotated under this process (backends/local/store/seal_hold.py): refuse from now on
        rather than seal with a retired key or fail to open what the new key sealed."""
        self._retired = True
        self._cipher = None

    @property
    def _aead(self) -> AESGCM:
        # cryptography costs ~35 ms to import; most CLI calls never seal or open a secret
        if self._retired:
            raise ConfigurationError(
                "The store's sealing key was rotated while this process ran: restart it to load the new key.",
                key="storage.seal_key_file",
            )
        if self._cipher is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._cipher = AESGCM(self._key)
        return self._cipher

    def seal(self, plaintext: str, context: str) -> str:
        nonce = secrets.token_bytes(12)
        return "v1." + encode_key(nonce + self._aead.encrypt(nonce, plaintext.encode("utf-8"), context.encode("utf-8")))

    def open(self, sealed: str, context: str) -> str:
        if not sealed.startswith("v1."):
            raise ValueError("unknown sealed format")
        raw = base64.urlsafe_b64decode(sealed[3:] + "=" * (-len(sealed[3:]) % 4))
        return self._aead.decrypt(raw[:12], raw[12:], context.encode("utf-8")).decode("utf-8")


async def reseal(db: Database, old: bytes, new: bytes) -> int:
    """Re-seal every sealed value from `old` to `new` (inside the caller's transaction); returns the count."""
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


async def set_key_check(db: Database, key: bytes) -> None:
    """Record `key` as the store's key (in the caller's transaction, beside the re-sealing)."""
    await db.execute("UPDATE meta SET value = :v WHERE key = :k", {"k": CHECK_ROW, "v": key_check(key)})
