"""/metrics in the Prometheus text format (prometheus-client), named by Prometheus and OpenTelemetry rules.

Names carry the `pluginsdk_` prefix and base units (`_seconds`), counters end in `_total`, labels are low
cardinality (route templates, never paths, user ids or request ids). With several workers
(`pluginsdk server start --workers N`) each process writes its samples to files in
PROMETHEUS_MULTIPROC_DIR (set by `serve()` before the workers start) and a scrape of any worker adds up
all of them. Machines and requests by status are read from the store at scrape time: every worker shares
the one database, so any worker's answer is the whole site's.
"""

from __future__ import annotations

import bisect
import itertools
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from .. import observe

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
_FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
C = TypeVar("C")
_CHILDREN_MAX = 4096
_AUTHZ_TIERS = ("route", "object")
_AUTHZ_OUTCOMES = ("allow", "deny")
_HTTP = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The instruments of one server process and the exposition of all of them."""

    def __init__(self, providers: tuple[str, ...] = ()) -> None:
        """`providers`: the configured provider names, whose error counters start at 0 for every operation."""
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        # the instruments observed several times per request: the loop's own where one process reports alone
        hot_histogram: Any = Histogram if self.multiprocess else LoopHistogram
        hot_counter: Any = Counter if self.multiprocess else LoopCounter
        self.http = hot_histogram(
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
        self.authz = hot_counter(
            "pluginsdk_authz_decisions_total",
            "Authorization decisions by tier (route, object) and outcome (allow, deny).",
            ["tier", "outcome"],
            registry=r,
        )
        for provider in providers:
            for operation in observe.PROVIDER_OPERATIONS:
                self.provider_errors.labels(provider, operation)
        for tier in _AUTHZ_TIERS:  # every known label set from the start: a scrape before any traffic shows 0
            for outcome in _AUTHZ_OUTCOMES:
                self.authz.labels(tier, outcome)
        self.policy_compile = Histogram(
            "pluginsdk_policy_compile_duration_seconds", "Time to compile the policy.", buckets=_FAST, registry=r
        )
        self.statements = hot_histogram(
            "pluginsdk_store_statement_duration_seconds",
            "Latency of store statements.",
            ["db_system", "db_operation"],
            buckets=_FAST,
            registry=r,
        )
        self._http_children: dict[tuple[str, str, int], Callable[[float], None]] = {}

    def install(self) -> None:
        """Point the engine's hooks (`pluginsdk.observe`) at these instruments.

        The hot hooks (a store statement, an authorization decision: several per request) keep each label
        set's child, so an event costs one dict lookup and the child's own update, not `labels()`.
        """
        observe.statement = _by_labels(self.statements, "observe")
        observe.authz = _by_labels(self.authz, "inc")
        observe.policy_compile = self.policy_compile.observe

        def provider_call(provider: str, op: str, seconds: float, outcome: str | None) -> None:
            self.provider_calls.labels(provider, op).observe(seconds)
            if outcome is not None:
                self.provider_errors.labels(provider, op).inc()

        observe.provider_call = provider_call
        observe.provider_throttle = lambda provider, op: self.provider_throttles.labels(provider, op).inc()

    @staticmethod
    def uninstall() -> None:
        observe.statement = observe.authz = observe.policy_compile = observe.provider_call = None
        observe.provider_throttle = None

    def observe_http(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        observe = self._http_children.get(key)
        if observe is None:
            if len(self._http_children) >= _CHILDREN_MAX:  # bounded: methods and statuses come from clients
                self._http_children.clear()
            observe = self._http_children[key] = self.http.labels(route, method, str(status)).observe
        observe(seconds)

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


class _LoopFamily(ABC, Generic[C]):
    """A labelled instrument updated without locks: for instruments observed only on the event loop's thread
    (the server's requests, store statements, decisions), several times per request, and collected into the
    registry as the same text prometheus-client's own writes. A process among several workers uses
    prometheus-client's instead: only its files add up across processes."""

    def __init__(
        self, name: str, documentation: str, labelnames: list[str], make: Callable[[], C], registry: Any
    ) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, labelnames
        self.children: dict[tuple[str, ...], C] = {}
        self._make = make
        registry.register(self)

    def labels(self, *values: str) -> C:
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = self._make()
        return child

    @abstractmethod
    def family(self) -> Any:
        """An empty metric family of this instrument's kind."""

    @abstractmethod
    def add(self, family: Any, values: tuple[str, ...], child: C) -> None:
        """One label set's samples into `family`."""

    def describe(self) -> list[Metric]:
        return [self.family()]

    def collect(self) -> list[Metric]:
        family = self.family()
        for values, child in list(self.children.items()):
            self.add(family, values, child)
        return [family]


class LoopHistogram(_LoopFamily["_Bins"]):
    """`prometheus_client.Histogram`'s text (`_bucket`, `_count`, `_sum`, `_created`), without locks."""

    def __init__(
        self, name: str, documentation: str, labelnames: list[str], *, buckets: tuple[float, ...], registry: Any
    ) -> None:
        bounds = list(buckets)
        self.edges = [*map(floatToGoString, buckets), "+Inf"]
        super().__init__(name, documentation, labelnames, lambda: _Bins(bounds), registry)

    def family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def add(self, family: HistogramMetricFamily, values: tuple[str, ...], child: _Bins) -> None:
        cumulative = zip(self.edges, itertools.accumulate(child.counts), strict=True)
        family.add_metric(list(values), list(cumulative), child.total)
        family.add_sample(self.name + "_created", dict(zip(self.labelnames, values, strict=True)), child.created)


class _Bins:
    """One label set's bucket counts (not cumulative: the +Inf bin last) and sum."""

    __slots__ = ("bounds", "counts", "created", "total")

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, amount)] += 1  # the first bound >= amount: `le` semantics
        self.total += amount


class LoopCounter(_LoopFamily["_Count"]):
    """`prometheus_client.Counter`'s text (`_total`, `_created`), without locks."""

    def __init__(self, name: str, documentation: str, labelnames: list[str], *, registry: Any) -> None:
        super().__init__(name.removesuffix("_total"), documentation, labelnames, _Count, registry)

    def family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def add(self, family: CounterMetricFamily, values: tuple[str, ...], child: _Count) -> None:
        family.add_metric(list(values), child.value, created=child.created)


class _Count:
    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


def _by_labels(metric: Any, action: str) -> Callable[..., None]:
    """`metric.labels(*labels).<action>(*value)`, with each label set's bound method kept (label values here
    are fixed vocabularies: tiers and outcomes, dialects and SQL verbs)."""
    bound: dict[tuple[str, str], Callable[..., None]] = {}

    def hook(a: str, b: str, *value: float) -> None:
        call = bound.get((a, b))
        if call is None:
            call = bound[(a, b)] = getattr(metric.labels(a, b), action)
        call(*value)

    return hook


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
    c = GaugeMetricFamily(
        "pluginsdk_capacity_offering_failures",
        "Capacity failures in a row of each launch candidate the capacity memory holds, by its state.",
        labels=["offering", "provider", "state"],
    )
    for row in counts.get("offerings", []):
        c.add_metric([str(row["offering"]), str(row["provider"]), str(row["state"])], float(row["failures"]))
    took = GaugeMetricFamily(
        "pluginsdk_metrics_store_read_duration_seconds", "Time this scrape spent reading the store gauges."
    )
    took.add_metric([], time.perf_counter() - started)

    class _Fixed:
        def collect(self) -> list[GaugeMetricFamily]:
            return [m, q, c, took]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed())
    return generate_latest(registry)
