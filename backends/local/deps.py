"""What the provisioning handlers and the reconciler use of the engine, as one typed object, and its parts.

The engine builds one `Deps` when it starts and hands it to each handler of `handlers/` (and to the
reconciler): the settings, the store, the `TemplateCatalog` (stored and file templates), the `ProviderPool`
(started provider instances), `Access` (the tier-2 filters of listings), the capacity memory of launch
candidates with its counters, the bootstrap memory (machines ready, templates' bootstrap failures), and the
engine's call counters. A handler sees these and nothing else of the engine. The auth handlers receive the
auth service instead (`auth/service.py`); each handler module's table says which (`registry.py`). One module
for the parts: a CLI call imports it whatever it runs.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pluginsdk import observe
from pluginsdk.config import Settings
from pluginsdk.errors import HandlerDiscoveryError, NotFoundError, ValidationError
from pluginsdk.models import Template
from pluginsdk.principal import Principal

from .providers import load_provider_class
from .providers.base import ProviderDriver
from .store import Store
from .store.boot import BootMemory
from .templates_files import TemplateFiles

if TYPE_CHECKING:
    from pluginsdk.models import Machine, Request
    from pluginsdk.models.plans import AccessPlan

    from .call import Authorizer
    from .store.capacity import CapacityMemory

__all__ = ["Access", "Deps", "ProviderPool", "StoredObjects", "TemplateCatalog"]

T = TypeVar("T")


class TemplateCatalog:
    """Stored templates and templates from files; a stored one wins on the same id."""

    __slots__ = ("files", "store")

    def __init__(self, store: Store, files: TemplateFiles) -> None:
        self.store = store
        self.files = files

    async def count(self) -> int:
        """Stored templates and the files' the store does not hide (a stored one wins on the same id)."""
        files = list(self.files.load())
        return await self.store.count_templates() + len(files) - len(await self.store.stored_template_ids(files))

    async def get(self, template_id: str) -> Template | None:
        """One template by id, stored or from a file; None when there is none."""
        return await self.store.get_template(template_id) or self.files.load().get(template_id)


class StoredObjects:
    """The provisioning objects as stored, for the auth service's tier 2 (`auth/objects.py`, `ObjectSource`):
    the one part of the engine it reads."""

    def __init__(self, store: Store, templates: TemplateCatalog) -> None:
        self._store = store
        self._templates = templates

    async def request(self, request_id: str) -> Request | None:
        return await self._store.get_request(request_id)

    async def machine(self, machine_id: str) -> Machine | None:
        return await self._store.get_machine(machine_id)

    async def template(self, template_id: str) -> Template | None:
        return await self._templates.get(template_id)

    async def templates(self, limit: int) -> list[Template]:
        """Up to `limit` templates, stored ones first then the files' the store does not hide (what-if objects)."""
        stored, _ = await self._store.page_templates(limit=limit)
        ids = {t.template_id for t in stored}
        files = [t for i, t in self._templates.files.load().items() if i not in ids]
        return [*stored, *files][:limit]

    async def requests(self, limit: int) -> list[Request]:
        return (await self._store.list_requests(limit=limit))[0]

    async def machines(self, limit: int) -> list[Machine]:
        return (await self._store.list_machines(limit=limit))[0]


class ProviderPool:
    """Provider instances by name (`provider.instances`, or a driver's own name); the configured default is
    the one asked for without a name."""

    __slots__ = ("_drivers", "settings", "store")

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._drivers: dict[str, ProviderDriver] = {}

    @property
    def default_name(self) -> str:
        """The default provider instance's name (`provider.default`, else `provider.type`)."""
        return self.settings.provider.default_instance()

    def started(self, name: str) -> ProviderDriver | None:
        """The driver of `name` if it is started already (nothing is started here)."""
        return self._drivers.get(name)

    async def get(self, name: str | None = None) -> ProviderDriver:
        """The provider instance by name (default: the configured default), started on first use.

        A name in `provider.instances` is that instance (its driver `type`, its own settings); any other name
        is the implicit instance of the driver of that name (`provider.<name>`, `provider.region`)."""
        asked = name
        name = name or self.default_name
        known = self._drivers.get(name)
        if known is not None:
            return known
        instance = self.settings.provider.instances.get(name)
        try:
            cls = load_provider_class(str(instance["type"]) if instance else name)
        except HandlerDiscoveryError as exc:
            if asked is None:  # the configured provider is missing: the server is misconfigured
                raise
            raise NotFoundError("provider", asked, exc.message) from None
        inherited = {"region": self.settings.provider.region, "profile": self.settings.provider.profile}
        if instance is not None:
            config = inherited | {k: v for k, v in instance.items() if k != "type"}
        else:
            config = inherited | self.settings.group(f"provider.{name}")
        driver: ProviderDriver = cls(name=name, config=config, settings=self.settings)
        bind = getattr(driver, "bind_store", None)
        if bind is not None:
            bind(self.store)
        await driver.start()
        if observe.provider_call is not None:
            _measure_provider(driver)
        self._drivers[name] = driver
        return driver

    async def for_template(self, template: Template, name: str | None = None) -> ProviderDriver:
        """The provider instance that launches `template` (or its candidate on `name`), refused (400) when it
        does not serve the template's `provider_api`."""
        name = name or template.provider or (template.offerings[0].provider if template.offerings else None)
        driver = await self.get(name)
        if template.provider_api not in driver.apis:
            raise ValidationError(
                f"Template '{template.template_id}' uses provider_api '{template.provider_api}', which the "
                f"'{driver.name}' provider does not serve (it serves: {', '.join(driver.apis)}).",
                details={"field": "provider_api", "value": template.provider_api, "expected": list(driver.apis)},
            )
        return driver

    async def aclose(self) -> None:
        """Close every started driver (one that fails to close does not keep the others open)."""
        for driver in self._drivers.values():
            with contextlib.suppress(Exception):
                await driver.aclose()
        self._drivers.clear()


def _measure_provider(driver: ProviderDriver) -> None:
    """Wrap the driver's calls so /metrics times them and counts their errors (server only)."""
    from functools import wraps

    for op in observe.PROVIDER_OPERATIONS:
        call = getattr(driver, op, None)
        if call is None:
            continue

        def wrap(call: Any, op: str) -> Any:
            @wraps(call)
            async def measured(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                outcome: str | None = None
                try:
                    return await call(*args, **kwargs)
                except Exception:
                    outcome = "error"  # throttled attempts are the driver's to report (observe.provider_throttle)
                    raise
                finally:
                    hook = observe.provider_call
                    if hook is not None:
                        hook(driver.name, op, time.perf_counter() - started, outcome)

            return measured

        setattr(driver, op, wrap(call, op))


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

    __slots__ = (
        "_capacity",
        "access",
        "boot",
        "capacity_counters",
        "metrics",
        "providers",
        "settings",
        "started_at",
        "store",
        "templates",
    )

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        templates: TemplateCatalog,
        providers: ProviderPool,
        access: Access,
        boot: BootMemory,
        metrics: Mapping[str, Mapping[str, float]],
        started_at: float,
    ) -> None:
        self.settings = settings
        self.store = store
        """Requests, machines and stored templates: every statement a handler runs is one of its methods."""
        self.templates = templates
        self.providers = providers
        self.access = access
        self._capacity: CapacityMemory | None = None
        self.boot = boot
        """Machines that reported ready and templates' bootstrap failures (`store/boot.py`), on the store."""
        self.capacity_counters: dict[str, float] = defaultdict(float)
        """Capacity failures, fallbacks and skipped candidates of this engine (`get_metrics`)."""
        self.metrics = metrics
        """The engine's call counters by operation name (calls, errors, seconds), read by `get_metrics`."""
        self.started_at = started_at

    @property
    def capacity(self) -> CapacityMemory:
        """The capacity memory of launch candidates (`store/capacity.py`), on the store, with `provider.capacity`'s
        cooldowns: made when a launch first asks it, so a call that launches nothing reads neither."""
        if self._capacity is None:
            from .store.capacity import CapacityMemory

            limits = self.settings.provider.capacity
            self._capacity = CapacityMemory(
                self.store.db,
                cooldown=limits.cooldown_seconds,
                max_cooldown=limits.max_cooldown_seconds,
                probe=limits.probe_seconds,
            )
        return self._capacity
