"""The shipped examples run: the quickstart script and the notebook (executed headless)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.notebook import jupyter

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_script(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")}
    cmd = [sys.executable, str(ROOT / "examples" / "quickstart.py"), "--store", str(tmp_path / "q.db"), "--count", "2"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=True)
    assert "template 'quickstart' created" in first.stdout
    assert ": completed after" in first.stdout and '"status": "completed"' in first.stdout
    assert "return request ret-" in first.stdout and "2 of 2 machines terminated" in first.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=True)
    assert "exists already" in again.stdout


def test_notebook_executes_headless() -> None:
    nbformat, nbclient = jupyter()
    nb = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = "".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.get("outputs", [])
    )
    assert "completed" in outputs and "template_id: str" in outputs
    assert "3 of 2" not in outputs and "2 of 2 machines terminated" in outputs
