"""The engine's provider drivers: each started on first use and kept until the engine closes."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pluginsdk import observe
from pluginsdk.config import Settings
from pluginsdk.errors import HandlerDiscoveryError, NotFoundError, ValidationError
from pluginsdk.models import Template

from .providers import load_provider_class
from .providers.base import ProviderDriver
from .store import Store

__all__ = ["ProviderPool"]


class ProviderPool:
    """Provider drivers by name; the configured one is the default."""

    __slots__ = ("_drivers", "settings", "store")

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._drivers: dict[str, ProviderDriver] = {}

    @property
    def default_name(self) -> str:
        """The configured provider's name (`provider.type`)."""
        return self.settings.provider.type

    def started(self, name: str) -> ProviderDriver | None:
        """The driver of `name` if it is started already (nothing is started here)."""
        return self._drivers.get(name)

    async def get(self, name: str | None = None) -> ProviderDriver:
        """The driver by name (default: the configured one), started on first use."""
        asked = name
        name = name or self.settings.provider.type
        known = self._drivers.get(name)
        if known is not None:
            return known
        try:
            cls = load_provider_class(name)
        except HandlerDiscoveryError as exc:
            if asked is None:  # the configured provider is missing: the server is misconfigured
                raise
            raise NotFoundError("provider", asked, exc.message) from None
        config = {
            "region": self.settings.provider.region,
            "profile": self.settings.provider.profile,
            **self.settings.group(f"provider.{name}"),
        }
        driver: ProviderDriver = cls(name=name, config=config, settings=self.settings)
        bind = getattr(driver, "bind_store", None)
        if bind is not None:
            bind(self.store)
        await driver.start()
        if observe.provider_call is not None:
            _measure_provider(driver)
        self._drivers[name] = driver
        return driver

    async def for_template(self, template: Template) -> ProviderDriver:
        """The configured driver, refused (400) when it does not serve the template's `provider_api`."""
        driver = await self.get()
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
