"""System queries: configuration, providers, status, metrics."""

from typing import Literal

from ..models import ConfigurationView, Metrics, ProviderHealth, ProviderList, ProvidersStatus, SystemStatus
from ._base import Cli, Mcp, Policy, Query, Rest

__all__ = [
    "GetConfigurationQuery",
    "GetMetricsQuery",
    "GetProviderHealthQuery",
    "GetProvidersStatusQuery",
    "GetSystemStatusQuery",
    "ListProvidersQuery",
]

_SYSTEM = Policy(category="system")


class GetConfigurationQuery(Query[ConfigurationView]):
    """The effective configuration (credentials masked) and where each value came from (administrators)."""

    rest = Rest("GET", "/api/v1/config")
    cli = Cli("system", "config")
    mcp = Mcp(extra=("get_provider_config",))
    policy = _SYSTEM

    group: Literal["provider", "api", "storage", "logging", "scheduler", "templates", "sdk", "app"] | None = None
    """Only this group."""


class GetProviderHealthQuery(Query[ProviderHealth]):
    """Check that a provider answers."""

    rest = Rest("GET", "/api/v1/providers/health")
    cli = Cli("system", "health")
    mcp = Mcp(extra=("check_provider_health",))
    policy = _SYSTEM

    provider_name: str | None = None
    """Provider to check (default: the configured one)."""
    detailed: bool = False
    """Include the provider's details."""


class ListProvidersQuery(Query[ProviderList]):
    """List the provider drivers installed and which one is active."""

    rest = Rest("GET", "/api/v1/providers")
    cli = Cli("providers", "list")
    policy = _SYSTEM


class GetProvidersStatusQuery(Query[ProvidersStatus]):
    """Provider instances and candidates cooling down after capacity errors."""

    rest = Rest("GET", "/api/v1/providers/status")
    cli = Cli("providers", "status")
    policy = _SYSTEM


class GetSystemStatusQuery(Query[SystemStatus]):
    """Version, backend, provider, store and request counts at a glance."""

    rest = Rest("GET", "/api/v1/system/status")
    cli = Cli("system", "status")
    policy = _SYSTEM


class GetMetricsQuery(Query[Metrics]):
    """Operation counters and timings of this engine."""

    rest = Rest("GET", "/api/v1/system/metrics")
    cli = Cli("system", "metrics")
    mcp = Mcp(extra=("get_provider_metrics",))
    policy = _SYSTEM
