"""The CLI tests' environment: `env` is one user's (`tests/support/cli.py`); a file needing another
configuration writes it to `env["PLUGIN_CONFIG"]` or overrides `env` with `cli_environment(tmp_path, ...)`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import cli_environment


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_environment(tmp_path)
