"""The npm clients every test shares: one `npm ci` of `tests/clients/package.json` and its lockfile.

The MCP TypeScript SDK client and the MCP Inspector CLI (tests/mcp/test_ts_client.py), Redocly CLI,
Spectral, openapi-typescript + openapi-fetch and TypeScript (tests/server/test_openapi_clients.py), axe-core
(tests/console) and oidc-provider, a real OpenID provider (tests/support/oidc.py), are installed together,
once per lockfile, into a cache directory outside the repository (`$PLUGINSDK_TEST_CACHE`, else
`$XDG_CACHE_HOME/pluginsdk-tests`, else `~/.cache/pluginsdk-tests`), under a file lock so parallel sessions
install one after the other. A test that needs them skips, saying why,
only where Node.js 20+ with npm is absent or npm refuses the install — and fails instead where
`PLUGINSDK_REQUIRE_CLIENTS` is set (CI sets it: there the independent clients must run).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["PACKAGES", "cache_root", "npm_clients", "unavailable"]

PACKAGES = Path(__file__).resolve().parents[1] / "clients"
PACKAGE_FILES = ("package.json", "package-lock.json")


def cache_root() -> Path:
    explicit = os.environ.get("PLUGINSDK_TEST_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pluginsdk-tests"


@functools.cache
def _install() -> tuple[Path | None, str]:
    """(the install root, "") or (None, why not)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return None, "Node.js (node and npm on PATH) is not installed; the npm test clients need Node.js 20+"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        return None, f"Node.js {version} is older than 20, which the pinned npm clients need"
    digest = hashlib.sha256(b"".join((PACKAGES / f).read_bytes() for f in PACKAGE_FILES)).hexdigest()[:16]
    root = cache_root() / f"clients-{digest}"
    root.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / "node_modules" / ".pluginsdk-installed"
        if not marker.exists():
            for name in PACKAGE_FILES:
                shutil.copy2(PACKAGES / name, root / name)
            res = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if res.returncode != 0:
                return None, f"npm ci refused to install tests/clients: {res.stderr.strip()[-500:]}"
            marker.touch()
    return root, ""


def unavailable(why: str) -> NoReturn:
    """An independent client cannot run here: skip the test, or fail it where `PLUGINSDK_REQUIRE_CLIENTS` is set."""
    if os.environ.get("PLUGINSDK_REQUIRE_CLIENTS"):
        pytest.fail(f"{why} (PLUGINSDK_REQUIRE_CLIENTS is set)")
    pytest.skip(why)


def npm_clients() -> Path:
    """The directory whose `node_modules` holds the clients (see `unavailable` where they cannot be had)."""
    root, why = _install()
    if root is None:
        unavailable(why)
    return root
