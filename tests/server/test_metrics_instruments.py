"""The lock-free instruments of the request path (`LoopHistogram`, `LoopCounter`) write exactly the text
prometheus_client's `Histogram` and `Counter` write for the same observations, and the server's hooks keep
counting through the label children they keep; the app's one door times every answer under its route
template."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from pluginsdk import observe
from pluginsdk.server.metrics import LoopCounter, LoopHistogram, Metrics
from tests.support.backends import base_config


def _text(registry: CollectorRegistry) -> str:
    """The exposition with the `_created` timestamps left out (they differ by construction time)."""
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1", generate_latest(registry).decode())


def test_loop_instruments_write_what_prometheus_client_writes() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    buckets = (0.001, 0.01, 0.1)
    h_ours = LoopHistogram("x_seconds", "d", ["a", "b"], buckets=buckets, registry=ours)
    h_theirs = Histogram("x_seconds", "d", ["a", "b"], buckets=buckets, registry=theirs)
    c_ours = LoopCounter("y_total", "d", ["t"], registry=ours)
    c_theirs = Counter("y_total", "d", ["t"], registry=theirs)
    for value in (0.0, 0.0005, 0.001, 0.0011, 0.01, 0.5, 7.0):  # on a bound, between, beyond the last
        for labels in (("p", "q"), ("r", "s")):
            h_ours.labels(*labels).observe(value)
            h_theirs.labels(*labels).observe(value)
    for tier in ("route", "route", "object"):
        c_ours.labels(tier).inc()
        c_theirs.labels(tier).inc()
    assert _text(ours) == _text(theirs)
    assert 'x_seconds_bucket{a="p",b="q",le="0.001"} 3.0' in _text(ours)


def test_the_hooks_count_every_event_through_their_kept_children() -> None:
    metrics = Metrics()
    metrics.install()
    try:
        assert observe.statement is not None and observe.authz is not None
        for _ in range(3):
            observe.statement("sqlite", "SELECT", 0.002)
            observe.authz("route", "allow")
        metrics.observe_http("/api/v1/requests/{request_id}", "GET", 200, 0.004)
        metrics.observe_http("/api/v1/requests/{request_id}", "GET", 200, 0.004)
    finally:
        Metrics.uninstall()
    text = generate_latest(metrics.registry).decode()
    assert 'pluginsdk_store_statement_duration_seconds_count{db_operation="SELECT",db_system="sqlite"} 3.0' in text
    assert 'pluginsdk_authz_decisions_total{outcome="allow",tier="route"} 3.0' in text
    assert (
        'pluginsdk_http_server_request_duration_seconds_count{http_request_method="GET",'
        'http_response_status_code="200",http_route="/api/v1/requests/{request_id}"} 2.0'
    ) in text


async def test_every_answer_of_the_door_is_timed_under_its_route_template(tmp_path: Path) -> None:
    """Served, refused before routing (413), wrong method (405), unknown path (404: one shared label)."""
    from pluginsdk.backend import load_backend
    from pluginsdk.config import load_settings
    from pluginsdk.server import create_app

    backend: Any = load_backend("local", load_settings(config=base_config(tmp_path)))
    await backend.start()
    try:
        app = create_app(backend)
        seen: list[tuple[str, str, int]] = []
        app.observe = lambda route, method, status, seconds: seen.append((route, method, status))

        async def call(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> None:
            scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
                     "query_string": b"", "headers": headers, "root_path": ""}  # fmt: skip

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                return None

            await app(scope, receive, send)

        await call("GET", "/api/v1/requests/req-1", [])
        await call("POST", "/api/v1/templates", [(b"content-length", b"2097152")])
        await call("DELETE", "/health", [])
        await call("GET", "/no/such/path/x1", [])
    finally:
        await backend.aclose()
    assert seen == [
        ("/api/v1/requests/{request_id}", "GET", 401),
        ("/api/v1/templates", "POST", 413),
        ("/health", "DELETE", 405),
        ("other", "GET", 404),
    ]
