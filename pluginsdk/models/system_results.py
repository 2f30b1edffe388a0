"""Result objects of the system and provider operations."""

from datetime import datetime
from typing import Any

from ._base import BaseModel
from .results import Result

__all__ = [
    "ConfigurationView",
    "Metrics",
    "OfferingStatus",
    "ProviderHealth",
    "ProviderInfo",
    "ProviderInstanceStatus",
    "ProviderList",
    "ProvidersStatus",
    "SystemStatus",
]


class SystemStatus(Result):
    version: str
    backend: str
    provider: str
    storage: str
    scheduler: str
    requests_by_status: dict[str, int] = {}
    active_machines: int = 0


class Metrics(Result):
    counters: dict[str, float] = {}


class ConfigurationView(Result):
    """The effective configuration, secrets redacted, with where each group came from."""

    configuration: dict[str, Any] = {}
    sources: dict[str, str] = {}


class ProviderInfo(BaseModel):
    name: str
    type: str
    apis: list[str] = []
    default: bool = False


class ProviderList(Result):
    providers: list[ProviderInfo] = []

    def page_items(self) -> list[ProviderInfo]:
        return self.providers


class ProviderHealth(Result):
    provider_name: str
    healthy: bool
    details: dict[str, Any] = {}


class ProviderInstanceStatus(BaseModel):
    """One configured provider instance and the machines it holds."""

    name: str
    type: str
    default: bool = False
    active_machines: int = 0


class OfferingStatus(BaseModel):
    """A launch candidate the capacity memory holds: `cooling` (skipped until `cooldown_until`), `half-open`
    (the next launch is a probe), `probing` (a probe is out) or `closed` (recovered)."""

    key: str
    """provider/instance type/subnets/price type."""
    provider: str
    state: str
    """closed, cooling, half-open or probing."""
    failures: int
    """Capacity failures in a row."""
    cooldown_until: datetime | None = None
    last_reason: str | None = None


class ProvidersStatus(Result):
    """Provider instances and the capacity memory of their launch candidates."""

    providers: list[ProviderInstanceStatus] = []
    offerings: list[OfferingStatus] = []
    protected: dict[str, str] = {}
    """Template -> why its launches are refused."""

    def page_items(self) -> list[OfferingStatus]:
        return self.offerings
