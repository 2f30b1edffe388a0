"""Rotating the store's sealing key (`pluginsdk auth rotate-seal-key`, `python -m backends.local.auth.seal_rotation
rotate`): the auth service's operator command, over the store's sealing (`backends/local/store/sealing.py`).

Refused while any process holds the store (`seal_hold`: running processes keep the key in memory). The new key
is written to `<key file>.new` first, every sealed value is re-sealed and the audit record appended in one
transaction, then the file is renamed over the old one. A crash between commit and rename is finished on the
next start (the check value says which file is right).
"""

from __future__ import annotations

import os
import secrets
from typing import TYPE_CHECKING

from pluginsdk.errors import ConfigurationError

from ..store.files import rename_durably, replace_private
from ..store.sealing import (
    KEY_BYTES,
    NEW_KEY_ENV,
    SEAL_KEY_ENV,
    SealKey,
    decode_key,
    encode_key,
    load_seal_key,
    pending_key_file,
    reseal,
    set_key_check,
)

if TYPE_CHECKING:
    from pluginsdk.config import Settings

__all__ = ["main", "new_key_from_env", "rotate", "rotated_message"]


async def rotate(settings: Settings, new_key: bytes | None = None, *, wait: float = 5.0) -> tuple[SealKey, int]:
    """Replace the store's sealing key; returns the new key's origin and how many values were re-sealed.

    Refused (ConfigurationError, nothing changed) while any process holds the store: running processes keep
    the key in memory (`seal_hold`); short CLI calls are waited for up to `wait` seconds. With a key from
    PLUGIN_SEAL_KEY or the configuration, pass the new key (PLUGIN_SEAL_KEY_NEW) and put it in place of the
    old one afterwards; with a key file, the file is replaced. The audit log records the rotation (action
    `rotate_seal_key`) in the transaction that re-seals.
    """
    from ..store import open_store
    from ..store.seal_hold import hold_store
    from .audit import operator
    from .store import AuthStore

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
                replace_private(pending_key_file(current.path), (encode_key(fresh) + "\n").encode("ascii"))
            async with db.transaction():
                count = await reseal(db, current.key, fresh)
                await set_key_check(db, fresh)
                where = str(current.path) if current.path is not None else NEW_KEY_ENV
                await AuthStore(db).append_audit(
                    actor=operator(),
                    action="rotate_seal_key",
                    target=("sealKey", "store"),
                    before={"keySource": current.source},
                    after={"keySource": where, "resealed": count},
                )
            if current.path is not None:
                rename_durably(pending_key_file(current.path), current.path)
                return SealKey(fresh, str(current.path), current.path), count
            return SealKey(fresh, NEW_KEY_ENV, None), count
        finally:
            await hold.release()
    finally:
        await store.aclose()


def main(argv: list[str] | None = None) -> int:
    """`python -m backends.local.auth.seal_rotation rotate [--config FILE]`: the same as `pluginsdk auth
    rotate-seal-key` (needs local access to the store and its key; no network call)."""
    import argparse
    import asyncio
    import sys

    from pluginsdk.config import load_settings

    parser = argparse.ArgumentParser(prog="python -m backends.local.auth.seal_rotation", description=main.__doc__)
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
