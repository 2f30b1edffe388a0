"""Result objects of the system and provider operations."""

from typing import Any

from ._base import BaseModel
from .results import Result

__all__ = ["ConfigurationView", "Metrics", "ProviderHealth", "ProviderInfo", "ProviderList", "SystemStatus"]


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
