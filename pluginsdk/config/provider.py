"""`provider`: the driver new requests use, named provider instances, capacity cooldowns and quotas, and the
built-in drivers' own groups (`provider.local`; `provider.aws` in `aws.py`, imported when given; a third party's
driver brings its model). Capacity cooldowns and quotas (in `limits.py`) are built on first use."""

import re
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

import pydantic
from pydantic import Field

from .fields import wrong
from .group import INSTANCES, LazyGroups, SettingsGroup, inputs

if TYPE_CHECKING:
    from .limits import CapacitySettings, QuotaSettings

__all__ = ["LocalProviderSettings", "ProviderSettings", "driver_names"]


class LocalProviderSettings(SettingsGroup):
    """`provider.local`: the simulated provider (backends/local/providers/local.py)."""

    boot_delay: float = Field(2.0, ge=0)
    terminate_delay: float = Field(1.0, ge=0)
    failure_rate: float = Field(0.0, ge=0, le=1)
    terminate_failure_rate: float = Field(0.0, ge=0, le=1)
    capacity: int = Field(1000, ge=0)
    seed: str | int | None = None
    region: str | None = None
    profile: str | None = None
    run_user_data: bool = False
    """For testing: a booted machine runs its template's `user_data` as a local process (docs/schedulers.md)."""
    user_data_log_dir: str | None = None
    """Where those processes write (default: discarded)."""
    capacity_errors: list[str] = []
    """Instance types (or `type@subnet`) whose launches are refused for capacity (docs/providers.md)."""
    capacity_failure_rate: float = Field(0.0, ge=0, le=1)
    """Share of launch calls refused for capacity."""
    reclaim_after: float | None = Field(None, ge=0)
    """Seconds after boot when the simulated cloud takes a running machine back (a spot interruption)."""
    reclaim_rate: float = Field(1.0, ge=0, le=1)
    """Share of machines it takes back."""
    ready_rate: float = Field(1.0, ge=0, le=1)
    """Share of booted machines that report ready by themselves (0: none ever does; docs/providers.md)."""


PROVIDER_GROUPS: dict[str, str] = {"local": "provider.LocalProviderSettings", "aws": "aws.AwsProviderSettings"}
"""The built-in drivers' groups -> their model (`module.Class` in this package): `provider.aws`'s is imported
only when a configuration gives it."""

_GroupModel = type[SettingsGroup]  # ProviderSettings' field `type` hides the builtin in its body


def driver_names() -> list[str]:
    """The provider drivers installed: the built-ins and the `pluginsdk.providers` entry points."""
    from importlib.metadata import entry_points

    return sorted({*PROVIDER_GROUPS, *(ep.name for ep in entry_points(group="pluginsdk.providers"))})


_INSTANCE_NAME = r"^[a-z][a-z0-9_-]{0,62}$"
"""A provider instance's name (compiled on first use, by `re`'s cache)."""


class ProviderSettings(LazyGroups, SettingsGroup):
    open_groups: ClassVar[bool] = True
    lazy_groups: ClassVar[dict[str, str]] = {"capacity": "limits.CapacitySettings", "quotas": "limits.QuotaSettings"}
    shown_after: ClassVar[dict[str, str]] = {"capacity": "instances", "quotas": "capacity"}

    type: str = "local"
    """Provider driver used for new requests (local, aws): the implicit instance of that name."""
    region: str | None = None
    profile: str | None = None
    max_machines_per_request: int = Field(1000, ge=1)
    """Global cap on a request's machine count."""
    default: str | None = None
    """Provider instance a template that names none uses (default: `type`, the implicit instance)."""
    instances: dict[str, dict[str, Any]] = Field({}, json_schema_extra=INSTANCES)
    """Named provider instances: name -> {type: driver, the driver's own settings} (docs/providers.md)."""

    @property
    def capacity(self) -> "CapacitySettings":
        """How long an offering that failed for capacity is skipped (`provider.capacity`)."""
        return cast("CapacitySettings", self.lazy_group("capacity"))

    @property
    def quotas(self) -> "QuotaSettings":
        """Limits checked when a request is made (`provider.quotas`)."""
        return cast("QuotaSettings", self.lazy_group("quotas"))

    @pydantic.field_validator("instances")
    @classmethod
    def _instances(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each instance names a driver installed here, and its settings are that driver's (unknown keys refused)."""
        for name, group in value.items():
            if not re.match(_INSTANCE_NAME, name):
                raise wrong(name, name, "an instance name: lower-case letters, digits, '-' or '_'")
            kind = group.get("type")
            if not isinstance(kind, str):
                raise wrong(f"{name}.type", kind, "the provider driver of this instance (local, aws, ...)")
            try:
                model = cls.sub_group(kind)
            except LookupError:
                expected = f"an installed provider driver ({', '.join(driver_names())})"
                raise wrong(f"{name}.type", kind, expected) from None
            if model is None:
                continue
            settings = {k: v for k, v in group.items() if k != "type"}
            fields = inputs(model)
            for key, given in settings.items():
                if key not in fields:
                    raise wrong(f"{name}.{key}", given, f"a key of provider.{kind}: {', '.join(fields)}")
            try:
                model.model_validate(settings)
            except pydantic.ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                raise wrong(f"{name}.{where}", err.get("input"), err["msg"]) from None
        return value

    @pydantic.model_validator(mode="after")
    def _default_known(self) -> Self:
        if self.default is not None and self.default not in self.instances and self.default != self.type:
            raise wrong("default", self.default, f"a provider instance ({', '.join([self.type, *self.instances])})")
        return self

    def instance_names(self) -> list[str]:
        """Every configured provider instance: the implicit one (`type`) first, then the named ones."""
        return [self.type, *(n for n in self.instances if n != self.type)]

    def default_instance(self) -> str:
        return self.default or self.type

    @classmethod
    def sub_group(cls, name: str) -> _GroupModel | None:
        """A built-in driver's model, else the `settings_model` of the installed driver of that name (a third
        party's driver without one keeps its group open, and shown masked). A name no driver has is unknown."""
        if name in PROVIDER_GROUPS:
            module, _, model_name = PROVIDER_GROUPS[name].rpartition(".")
            built_in: type[SettingsGroup] = getattr(import_module(f"{__package__}.{module}"), model_name)
            return built_in
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group="pluginsdk.providers") if ep.name == name]
        if not found:
            raise LookupError(name)
        model = getattr(found[0].load(), "settings_model", None)
        return model if isinstance(model, type) and issubclass(model, SettingsGroup) else None
