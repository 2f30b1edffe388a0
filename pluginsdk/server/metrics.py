"""/metrics in the Prometheus text format (prometheus-client), named by Prometheus and OpenTelemetry rules.

Names carry the `pluginsdk_` prefix and base units (`_seconds`), counters end in `_total`, labels are low
cardinality (route templates, never paths, user ids or request ids). With several workers
(`pluginsdk server start --workers N`) each process writes its samples to files in
PROMETHEUS_MULTIPROC_DIR (set by `serve()` before the workers start) and a scrape of any worker adds up
all of them. Machines and requests by status are read from the store at scrape time: every worker shares
the one database, so any worker's answer is the whole site's.
"""

from __future__ import annotations

import os
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from .. import _observe

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
_FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
_HTTP = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The instruments of one server process and the exposition of all of them."""

    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.http = Histogram(
            "pluginsdk_http_server_request_duration_seconds",
            "Duration of HTTP requests served (OpenTelemetry http.server.request.duration).",
            ["http_route", "http_request_method", "http_response_status_code"],
            buckets=_HTTP,
            registry=r,
        )
        self.provider_calls = Histogram(
            "pluginsdk_provider_call_duration_seconds",
            "Duration of cloud provider API calls.",
            ["provider", "operation"],
            buckets=_HTTP,
            registry=r,
        )
        self.provider_errors = Counter(
            "pluginsdk_provider_errors_total", "Provider API calls that failed.", ["provider", "operation"], registry=r
        )
        self.provider_throttles = Counter(
            "pluginsdk_provider_throttles_total",
            "Provider API attempts refused for rate limiting (retried or not), by the provider's API operation.",
            ["provider", "operation"],
            registry=r,
        )
        self.authz = Counter(
            "pluginsdk_authz_decisions_total",
            "Authorization decisions by tier (route, object) and outcome (allow, deny).",
            ["tier", "outcome"],
            registry=r,
        )
        self.policy_compile = Histogram(
            "pluginsdk_policy_compile_duration_seconds", "Time to compile the policy.", buckets=_FAST, registry=r
        )
        self.statements = Histogram(
            "pluginsdk_store_statement_duration_seconds",
            "Latency of store statements.",
            ["db_system", "db_operation"],
            buckets=_FAST,
            registry=r,
        )

    def install(self) -> None:
        """Point the engine's hooks (`pluginsdk._observe`) at these instruments."""
        _observe.statement = lambda system, op, s: self.statements.labels(system, op).observe(s)
        _observe.authz = lambda tier, outcome: self.authz.labels(tier, outcome).inc()
        _observe.policy_compile = self.policy_compile.observe

        def provider_call(provider: str, op: str, seconds: float, outcome: str | None) -> None:
            self.provider_calls.labels(provider, op).observe(seconds)
            if outcome is not None:
                self.provider_errors.labels(provider, op).inc()

        _observe.provider_call = provider_call
        _observe.provider_throttle = lambda provider, op: self.provider_throttles.labels(provider, op).inc()

    @staticmethod
    def uninstall() -> None:
        _observe.statement = _observe.authz = _observe.policy_compile = _observe.provider_call = None
        _observe.provider_throttle = None

    def observe_http(self, route: str, method: str, status: int, seconds: float) -> None:
        self.http.labels(route, method, str(status)).observe(seconds)

    async def exposition(self, backend: Any) -> bytes:
        """The text format: this process's (or, with workers, all processes') samples + store gauges."""
        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        else:
            registry = self.registry
        text = generate_latest(registry)
        return text + await _store_gauges(backend)


async def _store_gauges(backend: Any) -> bytes:
    inventory = getattr(backend, "inventory", None)
    if inventory is None:
        return b""
    started = time.perf_counter()
    counts = await inventory()
    machines, requests = counts["machines"], counts["requests"]
    m = GaugeMetricFamily(
        "pluginsdk_machines", "Machines in the store by status and provider.", labels=["status", "provider"]
    )
    for row in machines:
        m.add_metric([str(row["status"]), str(row["provider_name"])], float(row["n"]))
    q = GaugeMetricFamily(
        "pluginsdk_provisioning_requests",
        "Requests in the store by type (provision, return), status and provider.",
        labels=["type", "status", "provider"],
    )
    for row in requests:
        q.add_metric([str(row["request_type"]), str(row["status"]), str(row["provider_name"])], float(row["n"]))
    took = GaugeMetricFamily(
        "pluginsdk_metrics_store_read_duration_seconds", "Time this scrape spent reading the store gauges."
    )
    took.add_metric([], time.perf_counter() - started)

    class _Fixed:
        def collect(self) -> list[GaugeMetricFamily]:
            return [m, q, took]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed())
    return generate_latest(registry)
