"""tests/README.md's table names every folder of `tests/`, nested ones too, so a newcomer finds where a test goes."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _folders() -> list[str]:
    """Every folder under tests/ as `tests/a/b/`, leaving out caches and dependency trees (`node_modules`)."""
    skipped = ("node_modules",)
    return [
        f"tests/{p.relative_to(TESTS).as_posix()}/"
        for p in TESTS.rglob("*")
        if p.is_dir() and not any(part.startswith((".", "_")) or part in skipped for part in p.relative_to(TESTS).parts)
    ]


def test_the_readme_lists_every_test_folder() -> None:
    table = (TESTS / "README.md").read_text()
    folders = _folders()
    missing = sorted(f for f in folders if f"`{f}`" not in table)
    assert any("/" in f.removeprefix("tests/").rstrip("/") for f in folders) and not missing, (
        f"tests/README.md's table leaves out: {missing}"
    )
