"""Owner-only files: the SQLite store (with its -wal/-shm) and the sealing key beside it.

The store holds password and API-key hashes and sealed secrets; nobody but its owner should read it.
SQLite creates -wal and -shm with the mode of the database file, so creating the database 0600 first
covers all three. Directories we create are 0700; existing ones are left as the operator made them.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from pathlib import Path

__all__ = ["open_private", "private_dirs", "read_private", "rename_durably", "replace_private", "write_private_once"]

_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def private_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents, each 0700 (the process umask cannot widen that)."""
    missing: list[Path] = []
    d = directory
    while not d.exists():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            d.mkdir(mode=0o700)
            os.chmod(d, 0o700)


def _tighten(path: Path) -> None:
    """Drop group/other bits of a file we own (stores made by older versions were 0644)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if st.st_mode & _OTHERS and st.st_uid == os.geteuid():
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~_OTHERS)


def open_private(path: Path) -> None:
    """Make sure the SQLite file at `path` exists and only its owner can read it (and its -wal/-shm)."""
    private_dirs(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        os.close(fd)
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        _tighten(p)


def read_private(path: Path) -> bytes | None:
    """The file's bytes (tightened to owner-only first, when ours), or None when it does not exist."""
    try:
        _tighten(path)
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _temp_with(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def write_private_once(path: Path, data: bytes) -> bytes:
    """Create `path` (0600) holding `data` unless it exists; returns what the file holds.

    Complete or absent, never half-written: the bytes go to a temporary file first and are linked into
    place, so of several processes starting at once exactly one creates it and all read the same.
    """
    private_dirs(path.parent)
    tmp = _temp_with(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_bytes()


def replace_private(path: Path, data: bytes) -> None:
    """Write `path` (0600) atomically and durably, replacing what was there."""
    private_dirs(path.parent)
    rename_durably(_temp_with(path, data), path)


def rename_durably(source: Path, target: Path) -> None:
    """`os.replace(source, target)`, then the directory synced, so the new name survives a power loss (the
    sealing key file: the store's check value must never point at a key the disk has forgotten)."""
    os.replace(source, target)
    with contextlib.suppress(OSError):  # a file system or platform without directory fsync (Windows)
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
