"""`pluginsdk mcp serve` is on the CLI, and neither the CLI nor `pluginsdk.mcp` imports `mcp` until it serves."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from pluginsdk.cli import cli


def test_mcp_serve_is_a_cli_command() -> None:
    runner = CliRunner()
    root = runner.invoke(cli, ["--help"])
    assert root.exit_code == 0 and any(line.split()[:1] == ["mcp"] for line in root.output.splitlines())
    serve = runner.invoke(cli, ["mcp", "serve", "--help"])
    assert serve.exit_code == 0 and "--stdio" in serve.output


def test_cli_and_package_import_no_mcp() -> None:
    code = (
        "import sys, pluginsdk.cli, pluginsdk.mcp, pluginsdk.mcp.cli; "
        "print(','.join(m for m in ('mcp', 'mcp_types') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_missing_extra_is_a_sentence_on_stderr() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; sys.argv = ['pluginsdk', 'mcp', 'serve', '--stdio']; "
        "from pluginsdk.cli import main; main()"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, input="", check=False)
    assert res.returncode == 1 and res.stdout == ""
    assert "pip install 'pluginsdk[mcp]'" in res.stderr and "Traceback" not in res.stderr
