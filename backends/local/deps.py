"""What the provisioning handlers and the reconciler use of the engine, as one typed object.

The engine builds one `Deps` when it starts and hands it to each handler of `handlers/` (and to the
reconciler): the store, the template catalog, the provider drivers, the tier-2 filters of listings and the
engine's call counters. A handler sees these and nothing else of the engine. The auth handlers receive the
auth service instead (`auth/service.py`); each handler module's table says which (`registry.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pluginsdk.config import Settings
from pluginsdk.principal import Principal

from .provider_pool import ProviderPool
from .store import Store
from .template_catalog import TemplateCatalog

if TYPE_CHECKING:
    from pluginsdk.models.plans import AccessPlan

    from .engine import Authorizer

__all__ = ["Access", "Deps"]

T = TypeVar("T")


class Access:
    """Tier 2 over many stored objects: what a listing shows, what a change to many objects may touch."""

    __slots__ = ("_authz",)

    def __init__(self, authz: Authorizer) -> None:
        self._authz = authz

    async def visible(
        self, principal: Principal, object_type: str, items: Iterable[T], attrs: Callable[[T], Mapping[str, Any]]
    ) -> list[T]:
        """The items the principal may read (GET)."""
        return await self._authz.filter_allowed(principal, object_type, list(items), attrs, "GET")

    async def readable(self, principal: Principal, object_type: str) -> AccessPlan:
        """The query plan of a listing (GET): the store filters by it, so a page is full and its total exact."""
        return await self._authz.plan(principal, object_type, "GET")

    async def changeable(
        self,
        principal: Principal,
        object_type: str,
        items: Iterable[T],
        attrs: Callable[[T], Mapping[str, Any]],
        method: str,
    ) -> list[T]:
        """The items the principal may read and change with `method` (one it may not read is as good as missing
        to it, so it is neither changed nor named)."""
        readable = await self.visible(principal, object_type, items, attrs)
        return await self._authz.filter_allowed(principal, object_type, readable, attrs, method)


class Deps:
    """The engine's parts a provisioning handler uses, built once when the engine starts."""

    __slots__ = ("access", "metrics", "providers", "settings", "started_at", "store", "templates")

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        templates: TemplateCatalog,
        providers: ProviderPool,
        access: Access,
        metrics: Mapping[str, Mapping[str, float]],
        started_at: float,
    ) -> None:
        self.settings = settings
        self.store = store
        """Requests, machines and stored templates: every statement a handler runs is one of its methods."""
        self.templates = templates
        self.providers = providers
        self.access = access
        self.metrics = metrics
        """The engine's call counters by operation name (calls, errors, seconds), read by `get_metrics`."""
        self.started_at = started_at
