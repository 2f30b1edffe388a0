"""Shared fixtures: `sdk` runs every behavioural test against both backends."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pluginsdk import PluginSDK
from tests.support.backends import BACKENDS, base_config, open_sdk

if TYPE_CHECKING:
    import httpx

os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
for _var in [v for v in os.environ if v.startswith("PLUGIN_")]:
    del os.environ[_var]  # tests never inherit a developer's configuration


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def sdk(backend_kind: str, tmp_path: Path) -> AsyncIterator[PluginSDK]:
    """A started PluginSDK on a fresh store, acting as the administrator."""
    async with open_sdk(backend_kind, tmp_path) as s:
        yield s


@pytest.fixture
async def local_sdk(tmp_path: Path) -> AsyncIterator[PluginSDK]:
    async with open_sdk("local", tmp_path) as s:
        yield s


@pytest.fixture
async def rest(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of a server on a fresh store, acting as the administrator (an admin API key)."""
    import httpx

    from tests.support.remote import admin_key, running_server

    config = base_config(tmp_path)
    key = await admin_key(config)
    with running_server(config) as url:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": key}, timeout=30) as client:
            yield client


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """A fresh configuration on a SQLite file, then on a fresh PostgreSQL database (skipped where none answers)."""
    if request.param == "sqlite":
        yield base_config(tmp_path)
        return
    from tests.support.postgres import fresh_database

    async with fresh_database() as url:
        yield base_config(
            tmp_path, storage={"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")}
        )


@pytest.fixture(scope="session")
def npm_clients() -> Path:
    """The shared npm clients (`tests/support/npm.py`): one install per lockfile, outside the repository."""
    from tests.support.npm import npm_clients

    return npm_clients()


# -- the fast lane -------------------------------------------------------------------------------------------------
SLOW: dict[str, str] = {
    "tests/aws/": "a moto server per module and real retry back-off: ~10 s a test",
    "tests/console/": "Chromium driven by Playwright: 5-30 s a test",
    "tests/scale/": "several processes on one store",
    "tests/schedulers/": "scheduler scripts run as processes, and a Slurm controller",
    "tests/server/test_schemathesis.py": "the two schemathesis runs over every route: ~190 s",
    "tests/server/test_openapi_clients.py": "clients generated and installed from the OpenAPI document",
    "tests/server/test_openapi_wire.py::test_typed_client_compiles_strict_and_runs": "openapi-typescript and tsc, "
    "through npm: ~12 s",
    "tests/server/test_openapi_wire.py::test_spectral_oas_rules_find_nothing": "Spectral, through npm: ~4 s",
    "tests/fleet/": "server processes on PostgreSQL behind HAProxy, and Chromium: ~65 s in all",
    "tests/mcp/test_ts_client.py": "the TypeScript MCP SDK, through npm",
    "tests/mcp/test_http_clients.py": "independent MCP clients over HTTP, through npm",
    "tests/mcp/test_stdio.py": "the MCP server as a process over stdio",
    "tests/cli/test_schedulers.py": "HostFactory and LSF scripts round-trip as processes: 8-23 s a test",
    "tests/test_examples.py": "the quickstart and the notebook, run headless",
    "tests/policy/test_properties.py": "hypothesis against the reference evaluator: up to ~65 s a test",
    "tests/policy/test_decision_point_properties.py": "hypothesis against a walk of every grant: up to ~55 s",
    "tests/policy/test_plan_properties.py": "hypothesis: plans on SQLite and PostgreSQL against decisions",
    "tests/auth/test_stored_properties.py": "hypothesis on stored objects through both backends: ~37 s",
    "tests/mcp/test_profiles.py::test_listing_sizes": "every profile's tools/list through a server: ~55 s",
    "tests/policy/test_pdp_bounds.py::test_a_large_what_if_leaves_the_server_answering": "a what-if over a "
    "large policy while the server answers: ~30 s",
    "tests/auth/test_operator_commands.py::test_rotation_is_refused_while_a_server_runs": "a server process "
    "and a rotation on both stores: ~25 s each",
}
"""What `-m "not slow"` (the inner loop's lane, tests/README.md) leaves out: test id prefix (a folder, a file or one
test) -> why it is slow; figures from `--durations` on a loaded box. CI runs everything."""


# -- the order files start in ---------------------------------------------------------------------------------------
HEAVIEST: tuple[str, ...] = (
    "tests/server/test_schemathesis.py",
    "tests/schedulers/slurm/test_controller.py",
    "tests/mcp/test_ts_client.py",
    "tests/schedulers/test_simulation.py",
    "tests/test_typed_core.py",
    "tests/scale/test_chaos.py",
    "tests/fleet/test_fleet_console.py",
    "tests/fleet/test_fleet_mcp.py",
    "tests/server/test_openapi_wire.py",
    "tests/policy/test_properties.py",
    "tests/policy/test_decision_point_properties.py",
    "tests/test_doc_examples.py",
    "tests/fleet/test_fleet_rest.py",
    "tests/mcp/test_profiles.py",
    "tests/auth/federation/test_oidc_sign_in.py",
    "tests/cli/test_schedulers.py",
    "tests/mcp/test_http_clients.py",
)
"""Files that take a minute or more of one worker, heaviest first (`--durations`). On workers (`-n auto --dist
loadfile`, tests/README.md) whole files are handed out in collection order as workers free up; starting these
first keeps one of them from being the last file left while the other workers idle."""


def _start_rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return HEAVIEST.index(path) if path in HEAVIEST else len(HEAVIEST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(tuple(SLOW)):
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):  # an xdist worker: the order files are handed out in
        items.sort(key=_start_rank)  # stable: a file's own tests keep their order
