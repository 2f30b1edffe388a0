"""System handlers: configuration, providers, status, metrics."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pluginsdk.config import mask_credentials
from pluginsdk.constants import VERSION
from pluginsdk.errors import ValidationError
from pluginsdk.models import (
    ConfigurationView,
    Metrics,
    OfferingStatus,
    ProviderHealth,
    ProviderInfo,
    ProviderInstanceStatus,
    ProviderList,
    ProvidersStatus,
    SystemStatus,
)
from pluginsdk.operations import (
    GetConfigurationQuery,
    GetMetricsQuery,
    GetProviderHealthQuery,
    GetProvidersStatusQuery,
    GetSystemStatusQuery,
    ListProvidersQuery,
)
from pluginsdk.words import counted

from ..deps import Deps
from ..providers import load_provider_class, provider_names
from ..registry import HandlerTable

if TYPE_CHECKING:
    from ..call import Call

handlers = HandlerTable(Deps)


@handlers.on(GetConfigurationQuery)
async def get_configuration(deps: Deps, op: GetConfigurationQuery, call: Call) -> ConfigurationView:
    config = deps.settings.redacted()
    sources = dict(deps.settings.sources)
    storage = config.get("storage", {})
    if storage.get("type") == "sqlite" and not storage.get("path"):  # the file the store really opens
        storage["path"] = mask_credentials(deps.settings.storage_target)
        sources.setdefault("storage.path", "default (user data directory)")
    if op.group is not None:
        if op.group not in config:
            raise ValidationError(
                f"No configuration group {op.group!r}; groups: {', '.join(sorted(config))}.",
                details={"field": "group", "value": op.group, "expected": sorted(config)},
            )
        config = {op.group: config[op.group]}
        sources = {k: v for k, v in sources.items() if k.startswith(op.group + ".")}
    return ConfigurationView(configuration=config, sources=sources, message="Effective configuration")


@handlers.on(GetProviderHealthQuery)
async def get_provider_health(deps: Deps, op: GetProviderHealthQuery, call: Call) -> ProviderHealth:
    driver = await deps.providers.get(op.provider_name)
    name = driver.name
    started = time.perf_counter()
    details = await driver.health()
    healthy = bool(details.pop("healthy", False))
    details["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    reason = details.get("error") or details.get("reason")
    shown = {k: v for k, v in details.items() if k in ("latency_ms", "error", "code", "reason")}
    return ProviderHealth(
        provider_name=name,
        healthy=healthy,
        details=details if op.detailed else shown,
        success=healthy,
        message=f"Provider '{name}' is healthy."
        if healthy
        else f"Provider '{name}' is unhealthy: {reason or 'no reason given'}.",
    )


@handlers.on(ListProvidersQuery)
async def list_providers(deps: Deps, op: ListProvidersQuery, call: Call) -> ProviderList:
    """The configured provider instances (name -> driver), then the drivers installed that no instance uses."""
    settings = deps.settings.provider
    default = settings.default_instance()
    infos = []
    for name, kind in _instances(deps).items():
        infos.append(ProviderInfo(name=name, type=kind, apis=_apis(kind), default=name == default))
    for name in provider_names():
        if name not in {i.name for i in infos}:
            infos.append(ProviderInfo(name=name, type=name, apis=_apis(name), default=name == default))
    return ProviderList(providers=infos, message=f"{counted(len(infos), 'provider')}; active: {default}")


def _instances(deps: Deps) -> dict[str, str]:
    """Configured provider instance -> its driver."""
    settings = deps.settings.provider
    return {n: str(settings.instances[n]["type"]) if n in settings.instances else n for n in settings.instance_names()}


def _apis(kind: str) -> list[str]:
    try:
        return list(load_provider_class(kind).apis)
    except Exception:  # driver's extra not installed: listed without APIs
        return []


@handlers.on(GetProvidersStatusQuery)
async def get_providers_status(deps: Deps, op: GetProvidersStatusQuery, call: Call) -> ProvidersStatus:
    default = deps.settings.provider.default_instance()
    active = await deps.store.count_active_by_provider()
    instances = _instances(deps)
    providers = [
        ProviderInstanceStatus(name=n, type=k, default=n == default, active_machines=active.get(n, 0))
        for n, k in instances.items()
    ]
    providers += [  # machines of an instance no longer configured
        ProviderInstanceStatus(name=n, type="unknown", active_machines=c)
        for n, c in active.items()
        if n not in instances
    ]
    offerings = [
        OfferingStatus(
            key=o.key,
            provider=o.provider,
            state=o.state,
            failures=o.failures,
            cooldown_until=datetime.fromtimestamp(o.cooldown_until, UTC) if o.cooldown_until else None,
            last_reason=o.last_reason,
        )
        for o in await deps.capacity.states()
    ]
    cooling = sum(1 for o in offerings if o.state != "closed")
    protected = await deps.boot.protected()
    return ProvidersStatus(
        providers=providers,
        offerings=offerings,
        protected=protected,
        message=f"{counted(len(providers), 'provider instance')}; {counted(cooling, 'candidate')} not at full capacity"
        + (f"; {counted(len(protected), 'template')} protected" if protected else ""),
    )


@handlers.on(GetSystemStatusQuery)
async def get_system_status(deps: Deps, op: GetSystemStatusQuery, call: Call) -> SystemStatus:
    by_status = await deps.store.count_requests_by("status")
    active = sum((await deps.store.count_active_machines()).values())
    return SystemStatus(
        version=VERSION,
        backend="local",
        provider=deps.settings.provider.type,
        storage=deps.store.dialect,
        scheduler=deps.settings.scheduler.type,
        requests_by_status=by_status,
        active_machines=active,
        message="ok",
    )


@handlers.on(GetMetricsQuery)
async def get_metrics(deps: Deps, op: GetMetricsQuery, call: Call) -> Metrics:
    counters: dict[str, float] = {"uptime_seconds": round(time.time() - deps.started_at, 3)}
    for name, stats in sorted(deps.metrics.items()):
        counters[f"{name}.calls"] = stats["calls"]
        counters[f"{name}.errors"] = stats["errors"]
        counters[f"{name}.seconds"] = round(stats["seconds"], 6)
    for name, value in sorted(deps.capacity_counters.items()):
        counters[f"capacity.{name}"] = value
    return Metrics(counters=counters, message=f"{counted(len(deps.metrics), 'operation')} seen")
