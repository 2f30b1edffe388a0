"""Where the default store lives when the configuration names none."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_data_dir"]


def default_data_dir() -> Path:
    """Per-user data directory holding the default SQLite store (and PostgreSQL's seal key): platformdirs'
    user data directory for `pluginsdk` — `$XDG_DATA_HOME/pluginsdk` or `~/.local/share/pluginsdk` on Linux,
    `~/Library/Application Support/pluginsdk` on macOS, `%LOCALAPPDATA%\\pluginsdk` on Windows.

    Earlier releases used the Linux path everywhere; where that directory exists and platformdirs' does not
    (macOS, Windows), it stays in use, so an existing store and its key are not left behind. platformdirs is
    imported only here, when no `storage.path` is set (it costs a CLI call a few ms of imports).
    """
    import platformdirs

    current = Path(platformdirs.user_data_dir("pluginsdk", appauthor=False))
    earlier = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "pluginsdk"
    if earlier != current and earlier.is_dir() and not current.exists():
        return earlier
    return current
