"""A file-backed keyring backend for the login tests (PYTHON_KEYRING_BACKEND=tests.cli.keyring_file.FileKeyring).

Stores entries as JSON in $PLUGINSDK_TEST_KEYRING, so the CLI (in this process or its own), a server and the test
see the same keyring.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    @property
    def _path(self) -> Path:
        return Path(os.environ["PLUGINSDK_TEST_KEYRING"])

    def _load(self) -> dict[str, str]:
        return json.loads(self._path.read_text()) if self._path.exists() else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}|{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}|{username}"] = password
        self._path.write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}|{username}", None) is None:
            raise PasswordDeleteError("not found")
        self._path.write_text(json.dumps(data))
