"""Operating a server: `server start --workers N`, /metrics read by a real
Prometheus and checked by promtool, /livez and /readyz, JSON-lines logs carrying the request id."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk import PluginSDK
from tests.support.backends import base_config
from tests.support.postgres import ADMIN_URL, fresh_database


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def server(config: dict[str, Any], tmp_path: Path, *args: str) -> AsyncIterator[tuple[str, Path, Any]]:
    """`pluginsdk server start` as its own process; yields (url, log file, process); stops it with SIGTERM."""
    config_file = tmp_path / "server.json"
    config_file.write_text(json.dumps(config))
    port = free_port()
    log = tmp_path / f"server-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pluginsdk", "--config", str(config_file),
             "server", "start", "--port", str(port), *args],
            stdout=out, stderr=out, start_new_session=True,  # its own process group: a Ctrl-C can reach it alone
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient() as client:
            while True:
                try:
                    if (await client.get(f"{url}/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, "server not ready"
                await asyncio.sleep(0.1)
        yield url, log, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise


async def admin_key(config: dict[str, Any]) -> str:
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        return str(
            (await sdk.create_api_key(api_key_name="ops", description="operator key", user_id="administrator")).api_key
        )


def alive(pid: str) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def counter(exposition: str, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


@pytest.fixture
def config(any_store: dict[str, Any]) -> dict[str, Any]:
    """The store under test: SQLite, then PostgreSQL (`tests/conftest.py`)."""
    return any_store


@pytest.mark.slow
async def test_two_workers_on_one_port_count_together_and_stop_together(config: dict[str, Any], tmp_path: Path) -> None:
    key = await admin_key(config)
    async with server(config, tmp_path, "--workers", "2") as (url, _log, proc):
        async with httpx.AsyncClient(headers={"Authorization": key}) as client:
            for _ in range(40):  # new connections: the kernel spreads them over both workers
                async with httpx.AsyncClient(headers={"Authorization": key}) as one:
                    r = await one.get(f"{url}/api/v1/templates")
                    assert r.status_code == 200
            text = (await client.get(f"{url}/metrics")).text
        assert (
            counter(text, "pluginsdk_http_server_request_duration_seconds_count", http_route="/api/v1/templates") == 40
        )
        children = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        workers = [c for c in children if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")]
        assert len(workers) == 2
    assert proc.returncode == 0  # SIGTERM: every worker finished and the supervisor exited cleanly
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers):
        assert time.monotonic() < deadline, "a worker outlived the stop"
        await asyncio.sleep(0.1)


async def test_livez_readyz_and_the_exposition_passes_promtool(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    key = await admin_key(config)
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient(headers={"Authorization": key}) as c:
        assert (await c.get(f"{url}/livez")).json() == {"status": "ok"}
        ready = (await c.get(f"{url}/readyz")).json()
        assert ready["status"] == "ok" and ready["schema"] >= 5
        assert (await c.get(f"{url}/health")).status_code == 200
        made = await c.post(f"{url}/api/v1/machines/request", json={"template_id": "web", "requested_count": 1})
        assert made.status_code in (200, 201, 202), made.text
        await c.get(f"{url}/api/v1/requests/req-nope")
        await c.get(f"{url}/no/such/path/123")
        text = (await c.get(f"{url}/metrics")).text
    for name in (
        "pluginsdk_http_server_request_duration_seconds_bucket",
        "pluginsdk_store_statement_duration_seconds_count",
        "pluginsdk_authz_decisions_total",
        "pluginsdk_policy_compile_duration_seconds_count",
        "pluginsdk_machines",
        "pluginsdk_provisioning_requests",
    ):
        assert name in text, name
    assert 'http_route="/api/v1/requests/{request_id}"' in text  # the template, never the concrete id
    assert "req-nope" not in text and "/no/such/path" not in text
    assert counter(text, "pluginsdk_authz_decisions_total", tier="route", outcome="allow") >= 2
    assert counter(text, "pluginsdk_provider_call_duration_seconds_count", provider="local", operation="launch") == 1
    assert counter(text, "pluginsdk_provisioning_requests", type="provision") == 1
    assert 'pluginsdk_store_statement_duration_seconds_count{db_operation="SELECT",db_system="sqlite"}' in text
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_metrics_access_is_configurable(tmp_path: Path) -> None:
    config = base_config(tmp_path, api={"metrics": "authenticated"})
    key = await admin_key(config)
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient() as c:
        assert (await c.get(f"{url}/metrics")).status_code == 401
        assert (await c.get(f"{url}/metrics", headers={"Authorization": "psdk_wrong"})).status_code == 401
        ok = await c.get(f"{url}/metrics", headers={"Authorization": key})
        assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/plain")
    config = base_config(tmp_path, api={"metrics": "off"})
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient() as c:
        assert (await c.get(f"{url}/metrics")).status_code == 404


async def test_json_logs_carry_the_request_id_on_every_line(tmp_path: Path) -> None:
    config = base_config(tmp_path, logging={"level": "INFO", "format": "json"})
    key = await admin_key(config)
    async with server(config, tmp_path) as (url, log, _proc), httpx.AsyncClient(headers={"Authorization": key}) as c:
        await c.get(f"{url}/api/v1/templates", headers={"X-Request-ID": "trace-abc-1"})
        bad = await c.get(f"{url}/api/v1/templates/nope", headers={"X-Request-ID": "trace-abc-2"})
        assert bad.headers["x-request-id"] == "trace-abc-2"
        await asyncio.sleep(0.3)
    text = log.read_text().splitlines()
    lines = [json.loads(line) for line in text if line.startswith("{")]  # every log line is JSON ...
    banner = [line for line in text if line.strip() and not line.startswith("{")]
    assert all(not line.startswith(("INFO", "WARNING", "ERROR")) for line in banner), banner  # ... the rest is
    # the start banner `server start` prints for the operator (where it listens, the first-key hint)
    mine = [line for line in lines if str(line.get("request_id", "")).startswith("trace-abc")]
    assert {line["request_id"] for line in mine} >= {"trace-abc-1", "trace-abc-2"}
    assert all({"ts", "level", "logger", "msg"} <= set(line) for line in lines)


@pytest.mark.slow
async def test_a_real_prometheus_scrapes_the_server_and_reads_the_request_counter(tmp_path: Path) -> None:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus not installed (Debian package prometheus; .ci/run installs it)")
    config = base_config(tmp_path)
    key = await admin_key(config)
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient(headers={"Authorization": key}) as c:
        for _ in range(7):
            assert (await c.get(f"{url}/api/v1/templates")).status_code == 200
        target = url.removeprefix("http://")
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"scrape_configs: [{{job_name: pluginsdk, static_configs: [{{targets: ['{target}']}}]}}]\n"
        )
        prom_port = free_port()
        prom = subprocess.Popen(
            [binary, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            query = 'sum(pluginsdk_http_server_request_duration_seconds_count{http_route="/api/v1/templates"})'
            deadline = time.monotonic() + 60
            value = None
            while time.monotonic() < deadline:
                try:
                    r = await c.get(f"http://127.0.0.1:{prom_port}/api/v1/query", params={"query": query})
                    result = r.json()["data"]["result"]
                    if result:
                        value = float(result[0]["value"][1])
                        break
                except (httpx.TransportError, KeyError, ValueError):
                    pass
                await asyncio.sleep(0.5)
            assert value == 7.0
            up = (await c.get(f"http://127.0.0.1:{prom_port}/api/v1/query", params={"query": "up"})).json()
            assert up["data"]["result"][0]["value"][1] == "1"
        finally:
            prom.terminate()
            prom.wait(20)


async def test_the_cli_logs_json_lines_with_its_request_id_which_the_server_logs_too(tmp_path: Path) -> None:
    import os

    config = base_config(tmp_path, logging={"level": "INFO", "format": "json"})
    key = await admin_key(config)
    async with server(config, tmp_path) as (url, log, _proc):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")}
        env.update({"PLUGIN_API_URL": url, "PLUGIN_API_KEY": key, "PLUGIN_LOG_FORMAT": "json"})
        res = subprocess.run(
            [sys.executable, "-m", "pluginsdk", "--backend", "remote", "--log-level", "DEBUG", "--format", "json",
             "templates", "list"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        await asyncio.sleep(0.3)
    cli_lines = [json.loads(line) for line in res.stderr.splitlines() if line.startswith("{")]
    assert cli_lines, res.stderr
    ids = {line.get("request_id") for line in cli_lines}
    assert len(ids) == 1 and None not in ids  # one id on every line of the invocation
    (rid,) = ids
    served = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert any(line.get("request_id") == rid for line in served)  # the server's lines for that call carry it


def workers_of(proc: subprocess.Popen[bytes]) -> list[str]:
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=False).stdout
    return [c for c in children.split() if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")]


def listening(url: str) -> bool:
    """Whether anything still accepts on the server's port (a restarted server could bind it otherwise)."""
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


STOPS = {
    "SIGTERM to the supervisor": (signal.SIGTERM, False),
    "SIGINT to the supervisor": (signal.SIGINT, False),
    "Ctrl-C (SIGINT to the process group)": (signal.SIGINT, True),
}


@pytest.mark.slow
@pytest.mark.parametrize("stop", list(STOPS))
async def test_workers_all_exit_and_free_the_port_on_sigterm_and_sigint(
    config: dict[str, Any], tmp_path: Path, stop: str
) -> None:
    sig, group = STOPS[stop]
    key = await admin_key(config)
    async with server(config, tmp_path, "--workers", "2") as (url, log, proc):
        workers = workers_of(proc)
        assert len(workers) == 2, log.read_text()[-2000:]
        async with httpx.AsyncClient(headers={"Authorization": key}) as client:
            assert (await client.get(f"{url}/api/v1/templates")).status_code == 200
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        status = await asyncio.to_thread(proc.wait, 30)
        assert status == 0, log.read_text()[-3000:]  # a clean stop, not "killed by signal"
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers):
        assert time.monotonic() < deadline, "a worker outlived the stop"
        await asyncio.sleep(0.1)
    assert not listening(url)
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]


async def test_metrics_behind_a_permission_refuse_in_the_error_envelope(tmp_path: Path) -> None:
    config = base_config(tmp_path, api={"metrics": "authenticated"})
    key = await admin_key(config)
    async with PluginSDK(config=config) as sdk:  # a read-only user: the default policy gives it no GET /metrics
        await sdk.create_user_roles("reader", ["basicReadOnly"])
        made = await sdk.create_api_key(api_key_name="reader", description="read only", user_id="reader")
        refused_key = str(made.api_key)
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient() as c:
        for headers in ({}, {"Authorization": "psdk_wrong"}):
            r = await c.get(f"{url}/metrics", headers=headers)
            assert r.status_code == 401 and r.headers["content-type"] == "application/json"
            assert r.json()["success"] is False and r.json()["error_code"] == "UNAUTHENTICATED"
        denied = await c.get(f"{url}/metrics", headers={"Authorization": refused_key})
        assert denied.status_code == 403, denied.text
        assert set(denied.json()) == {"success", "error", "error_code", "details"}
        assert denied.json()["error_code"] == "FORBIDDEN"
        assert "pluginsdk_" not in denied.text
        ok = await c.get(f"{url}/metrics", headers={"Authorization": key})
        assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/plain")
        assert "pluginsdk_http_server_request_duration_seconds" in ok.text
    for access in ("loopback", "open"):  # no credential needed: loopback (the default) from here, open to all
        config = base_config(tmp_path, api={"metrics": access})
        async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient() as c:
            r = await c.get(f"{url}/metrics")
            assert r.status_code == 200 and "pluginsdk_http_server_request_duration_seconds" in r.text
    config = base_config(tmp_path, api={"metrics": "off"})
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient() as c:
        off = await c.get(f"{url}/metrics")
        assert off.status_code == 404 and off.json()["error_code"] == "NOT_FOUND"


async def set_schema(config: dict[str, Any], version: int) -> None:
    """Write the store's migration number behind the server's back (as a store another build migrates)."""
    storage = config["storage"]
    if storage.get("type") == "postgresql":
        import asyncpg

        conn = await asyncpg.connect(storage["url"])
        try:
            await conn.execute("UPDATE schema_version SET version = $1 WHERE id = 1", version)
        finally:
            await conn.close()
        return
    import sqlite3

    with sqlite3.connect(storage["path"]) as conn:
        conn.execute("UPDATE schema_version SET version = ? WHERE id = 1", (version,))


async def test_readyz_is_503_until_migrations_are_done_and_livez_stays_200(
    config: dict[str, Any], tmp_path: Path
) -> None:
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient() as c:
        ready = await c.get(f"{url}/readyz")
        assert ready.status_code == 200
        current = ready.json()["schema"]
        await set_schema(config, current - 1)
        behind = await c.get(f"{url}/readyz")
        assert behind.status_code == 503
        assert behind.json() == {
            "success": False,
            "error": f"Not ready: the store's schema is at migration {current - 1} of {current}.",
            "error_code": "NOT_READY",
            "details": {"store": "ok", "schema": current - 1, "expected": current},
        }
        assert (await c.get(f"{url}/livez")).json() == {"status": "ok"}
        await set_schema(config, current)
        assert (await c.get(f"{url}/readyz")).status_code == 200


@pytest.mark.postgres
async def test_readyz_is_503_when_the_store_does_not_answer_and_livez_stays_200(tmp_path: Path) -> None:
    async with fresh_database() as db_url:
        config = base_config(
            tmp_path, storage={"type": "postgresql", "url": db_url, "seal_key_file": str(tmp_path / "seal.key")}
        )
        async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient() as c:
            assert (await c.get(f"{url}/readyz")).status_code == 200
            import asyncpg

            admin = await asyncpg.connect(ADMIN_URL)
            try:  # the database goes away under the server (its connections are cut)
                await admin.execute(f'DROP DATABASE "{db_url.rsplit("/", 1)[1]}" WITH (FORCE)')
            finally:
                await admin.close()
            gone = await c.get(f"{url}/readyz", timeout=60)
            assert gone.status_code == 503, gone.text
            assert gone.json()["error_code"] == "NOT_READY" and gone.json()["details"] == {"store": "unreachable"}
            assert (await c.get(f"{url}/livez")).status_code == 200
