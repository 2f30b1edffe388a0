"""The typed face of PluginSDK's reflected methods (`pluginsdk/_sdk_methods.pyi`, which PluginSDK inherits
for type checkers): a misspelled keyword is a mypy error, the accepted aliases type-check.

mypy runs on the stub and a snippet only (the stub's model imports skipped), so this takes ~2 s, not the
whole project's analysis."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

STUB = Path(__file__).resolve().parents[1] / "pluginsdk" / "_sdk_methods.pyi"

SNIPPET = """
from pluginsdk._sdk_methods import SDKMethods


async def use(sdk: SDKMethods) -> None:
    await sdk.create_request("web", 2, wait=True, dry_run=True)
    await sdk.create_request("web", count=2)
    await sdk.create_request("web", machine_count=2, timeout=60)
    await sdk.get_request_status(request_id="req-1")
    await sdk.get_request_status(["req-1", "req-2"])
    await sdk.get_machine_status(machine_id="i-1")
    await sdk.list_templates(provider="aws")
    await sdk.get_request("req-1", long=True)
    await sdk.create_request("web", 2, wiat=True)  # line 14
    await sdk.get_request("req-1", lnog=True)  # line 15
    await sdk.create_request("web")  # line 16
"""


def test_mypy_flags_misspelled_keywords_and_accepts_the_aliases(tmp_path: Path) -> None:
    (tmp_path / "snippet.py").write_text(SNIPPET)
    cmd = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=skip", "--no-incremental",
           "--config-file", str(tmp_path / "none.ini"), "--no-error-summary", "--hide-error-context",
           "snippet.py", str(STUB)]  # fmt: skip
    (tmp_path / "none.ini").write_text("[mypy]\n")
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    assert lines == [14, 15, 16], out.stdout
    assert any('Unexpected keyword argument "wiat"' in e for e in errors)
    assert any('Unexpected keyword argument "lnog"' in e for e in errors)
