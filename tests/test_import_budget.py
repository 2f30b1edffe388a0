"""The import budget: `--help`, `templates list` and a HostFactory getRequestStatus import exactly the modules
their committed lists name (`tests/import_budget/*.txt`). A set, not a time: it cannot flake. A module that
joins a cold path fails here until `python -m tests.import_budget --update` records it, with its measured cost,
in the same commit."""

from __future__ import annotations

import pytest

from tests.import_budget import PATHS, Budget, differences, explain, measure_all


@pytest.fixture(scope="module")
def measured() -> dict[str, Budget]:
    return measure_all()


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_cold_path_imports_what_its_list_says(measured: dict[str, Budget], path: str) -> None:
    new, gone = differences(path, measured[path])
    assert not new and not gone, explain(path, new, gone)


def test_help_imports_no_event_loop_and_no_models(measured: dict[str, Budget]) -> None:
    """What the lists must never take in, whatever is recorded: `--help` runs no event loop and builds no model."""
    heavy = {m for m in measured["help"].modules if m.split(".")[0] in ("asyncio", "pydantic", "httpx", "ssl")}
    assert not heavy, sorted(heavy)
