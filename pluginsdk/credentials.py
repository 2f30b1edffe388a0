"""Where `pluginsdk login` keeps a server's credential (an API key, or an SSO session's `Bearer` token).

The OS keyring first (service `pluginsdk`, the entry named by the server URL). Where no usable keyring backend
exists (a headless server: keyring's `fail` or `null` backend, or one that drops what it is given), a JSON
file in the user's configuration directory (platformdirs: `$XDG_CONFIG_HOME/pluginsdk/credentials.json` or
`~/.config/pluginsdk/credentials.json` on Linux) that only its user can read (0600, its directory 0700), as
the `gh` and `az` CLIs do. The remote backend looks in the same two places (`read`). Imported only by `login`
and the remote backend when no key was given: keyring and platformdirs stay off the cold path.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from .constants import KEYRING_SERVICE

__all__ = ["Kept", "credentials_file", "delete", "keyring_name", "read", "writable_here", "write"]


class Kept(NamedTuple):
    """The outcome of a write or delete: whether it happened, and where (for the user's message)."""

    done: bool
    where: str


def credentials_file() -> Path:
    """The file used when no OS keyring is usable."""
    import platformdirs

    return Path(platformdirs.user_config_dir("pluginsdk", appauthor=False)) / "credentials.json"


def _keyring() -> Any:
    """keyring's backend when it can keep a password, else None (`fail`, `null`, or keyring missing)."""
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:  # pragma: no cover - keyring is a core dependency
        return None
    backend = keyring.get_keyring()
    return None if isinstance(backend, fail.Keyring | null.Keyring) else keyring


def keyring_name() -> str:
    """The keyring backend's dotted name (what `login`'s messages cite)."""
    import keyring

    backend = type(keyring.get_keyring())
    return f"{backend.__module__}.{backend.__qualname__}"


def _load(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _save(path: Path, entries: dict[str, str]) -> None:
    """Replace the file atomically, created 0600 (never readable by others, not even for an instant)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path.parent, 0o700)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entries, out, indent=1, sort_keys=True)
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def writable_here() -> str | None:
    """None when a credential can be kept (a usable keyring, or a writable configuration directory); else why
    not, to refuse before a sign-in whose token would be dropped."""
    if _keyring() is not None:
        return None
    directory = credentials_file().parent
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return f"no usable OS keyring ({keyring_name()}) and {directory} cannot be made ({exc.strerror})"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"no usable OS keyring ({keyring_name()}) and {directory} is not writable"
    return None


def read(url: str) -> str | None:
    """The credential kept for `url`: the keyring's, else the file's; None when neither holds one."""
    url = url.rstrip("/")
    kr = _keyring()
    if kr is not None:
        from keyring.errors import KeyringError

        try:
            value: str | None = kr.get_password(KEYRING_SERVICE, url)
        except (KeyringError, RuntimeError):
            value = None
        if value is not None:
            return value
    return _load(credentials_file()).get(url)


def write(url: str, secret: str) -> Kept:
    """Keep `secret` for `url`: in the keyring when one keeps it (read back to prove it), else in the file."""
    url = url.rstrip("/")
    kr = _keyring()
    if kr is not None:
        from keyring.errors import KeyringError

        try:
            kr.set_password(KEYRING_SERVICE, url, secret)
            kept = kr.get_password(KEYRING_SERVICE, url)
            if kept is not None and hmac.compare_digest(kept.encode(), secret.encode()):
                return Kept(True, f"the OS keyring ({keyring_name()})")
        except (KeyringError, RuntimeError):
            pass  # a backend that cannot keep it: the file
    path = credentials_file()
    try:
        _save(path, {**_load(path), url: secret})
    except OSError as exc:
        return Kept(False, f"{path} ({exc.strerror})")
    return Kept(True, f"{path} (readable only by you: no usable OS keyring)")


def delete(url: str) -> Kept:
    """Remove what is kept for `url` from both places; `done` when something was removed."""
    url = url.rstrip("/")
    removed: list[str] = []
    kr = _keyring()
    if kr is not None:
        from keyring.errors import KeyringError, PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError, KeyringError, RuntimeError):
            kr.delete_password(KEYRING_SERVICE, url)
            removed.append(f"the OS keyring ({keyring_name()})")
    path = credentials_file()
    entries = _load(path)
    if url in entries:
        del entries[url]
        _save(path, entries)
        removed.append(str(path))
    return Kept(bool(removed), " and ".join(removed))
