"""tests/README.md's table names every folder of `tests/`, so a newcomer finds where a test goes."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_the_readme_lists_every_test_folder() -> None:
    table = (TESTS / "README.md").read_text()
    folders = [p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))]
    missing = sorted(f for f in folders if f"`tests/{f}/`" not in table)
    assert folders and not missing, f"tests/README.md's table leaves out: {missing}"
