"""The effective configuration (`Settings`): one field per group, the small groups of the process itself —
storage, logging, scheduler, templates, the in-process SDK — and where the default store lives.

Three groups are not fields but built on first use (`LAZY_GROUPS`, through `LazyGroups` like the groups' own lazy
sub-groups): `mcp`, `slurm` and `app` (the auth service's eleven models). A CLI call that configures none of
them never creates their classes; a configuration that gives one has it validated by `load_settings` like any
other group, so a wrong value is refused at load either way.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import pydantic
from pydantic import ConfigDict, Field

from .api import ApiSettings
from .group import LazyGroups, SettingsGroup, masked, read_all
from .provider import ProviderSettings

if TYPE_CHECKING:
    from .app import AppSettings
    from .mcp import McpSettings
    from .slurm import SlurmSettings

__all__ = [
    "LAZY_GROUPS",
    "LoggingSettings",
    "SchedulerSettings",
    "SdkSettings",
    "Settings",
    "StorageSettings",
    "TemplateSettings",
    "default_data_dir",
]


LAZY_GROUPS: dict[str, str] = {"mcp": "mcp.McpSettings", "slurm": "slurm.SlurmSettings", "app": "app.AppSettings"}
"""The groups built on first use -> their model (`module.Class` in this package): `Settings`' `lazy_groups`."""


def default_data_dir() -> Path:
    """Per-user data directory holding the default SQLite store (and PostgreSQL's seal key): platformdirs'
    user data directory for `pluginsdk` — `$XDG_DATA_HOME/pluginsdk` or `~/.local/share/pluginsdk` on Linux,
    `~/Library/Application Support/pluginsdk` on macOS, `%LOCALAPPDATA%\\pluginsdk` on Windows.

    Earlier releases used the Linux path everywhere; where that directory exists and platformdirs' does not
    (macOS, Windows), it stays in use, so an existing store and its key are not left behind. platformdirs is
    imported only here, when no `storage.path` is set (it costs a CLI call a few ms of imports).
    """
    import platformdirs

    current = Path(platformdirs.user_data_dir("pluginsdk", appauthor=False))
    earlier = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "pluginsdk"
    if earlier != current and earlier.is_dir() and not current.exists():
        return earlier
    return current


class StorageSettings(SettingsGroup):
    type: Literal["sqlite", "postgresql", "memory"] = "sqlite"
    path: str | None = None
    """SQLite file (default: <user data dir>/pluginsdk.db)."""
    url: str | None = None
    """Database URL, e.g. postgresql://user@127.0.0.1:5432/db (a password in it is masked when shown)."""
    seal_key_file: str | None = None
    """Owner-only file of the key that seals secrets in the store (default: beside the SQLite file)."""


class LoggingSettings(SettingsGroup):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING"
    file: str | None = None
    format: Literal["text", "json"] = "text"
    """`json`: one JSON object per line, each with the request id of the call that caused it."""


class SchedulerSettings(SettingsGroup):
    type: Literal["default", "hostfactory", "lsf"] = "default"
    grace_period: int = 300
    """HostFactory getReturnRequests gracePeriod (seconds)."""
    instance_types: dict[str, Any] = {}
    """Instance type -> {ncpus, memory_mb, ncores, arch} for HostFactory/LSF template attributes."""


class TemplateSettings(SettingsGroup):
    dir: str | None = None
    """Directory of *.json / *.yaml template files loaded beside the stored ones."""


class SdkSettings(SettingsGroup):
    timeout: float = Field(3600, gt=0)
    user: str = "administrator"
    """User the in-process SDK acts as."""
    reconcile_interval: float = Field(1.0, gt=0)
    """Seconds between background reconciliation passes in long-lived processes."""
    claim_seconds: float = Field(60.0, gt=0, le=3600)
    """Lease a process holds on a request while it calls the provider for it; a dead process's lease
    expires after this and another process takes the request over."""


class Settings(LazyGroups, pydantic.BaseModel):
    """The effective configuration, validated. `sources` maps dotted keys to their origin.

    `load_settings` validates each group that was given on its own and takes the defaults of the others
    as they are (they are valid by construction), so a CLI call builds the validators of only the one or
    two groups it configures, not of all nine models. The `LAZY_GROUPS` are properties kept among the
    model's extra values: a given one is validated at load, one not given is made from its model's defaults
    when first read; dumps hold those given or read (`redacted` reads them all).
    """

    model_config = ConfigDict(extra="allow", defer_build=True)
    lazy_groups: ClassVar[dict[str, str]] = LAZY_GROUPS
    shown_after: ClassVar[dict[str, str]] = {"mcp": "sdk", "slurm": "mcp", "app": "slurm"}

    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    templates: TemplateSettings = Field(default_factory=TemplateSettings)
    sdk: SdkSettings = Field(default_factory=SdkSettings)
    sources: dict[str, str] = Field({}, exclude=True)
    config_file: str | None = Field(None, exclude=True)
    """The configuration file read (`config_path`, else PLUGIN_CONFIG), as an absolute path; None without one.
    What a process this one starts (the Slurm worker) or an operator must name to get the same settings."""

    @classmethod
    def of(cls, groups: dict[str, Any]) -> "Settings":
        """Settings holding `groups` (fields and lazy groups alike), the other fields at their defaults."""
        settings = Settings.model_construct(**{k: v for k, v in groups.items() if k not in LAZY_GROUPS})
        settings.lazy_given.update((k, v) for k, v in groups.items() if k in LAZY_GROUPS)
        return settings

    @property
    def app_given(self) -> "AppSettings | None":
        """`app` if a configuration gave it (validated at load) or it was read already; None: every key of it
        is at its default and its models are not built (what the auth service starts on without them)."""
        return cast("AppSettings | None", self.lazy_given.get("app"))

    @property
    def app(self) -> "AppSettings":
        """The auth service's settings (`app.authProvider`, `app.audit`, ...)."""
        return cast("AppSettings", self.lazy_group("app"))

    @app.setter
    def app(self, value: "AppSettings") -> None:
        self.lazy_given["app"] = value

    @property
    def mcp(self) -> "McpSettings":
        """The MCP tools served (docs/mcp.md)."""
        return cast("McpSettings", self.lazy_group("mcp"))

    @property
    def slurm(self) -> "SlurmSettings":
        """Slurm's cloud node sets and its worker (docs/schedulers.md, "Slurm")."""
        return cast("SlurmSettings", self.lazy_group("slurm"))

    def __repr_args__(self) -> Any:
        return list(self.redacted().items())

    def source_of(self, key: str) -> str:
        return self.sources.get(key, "default")

    def group(self, dotted: str) -> dict[str, Any]:
        """A free-form sub-group (e.g. `provider.local`) as a dict; {} when absent."""
        node: Any = self
        for part in dotted.split("."):
            if isinstance(node, LazyGroups) and part in node.lazy_groups:
                node = node.lazy_group(part)
                continue
            if isinstance(node, pydantic.BaseModel):
                node = node.__dict__.get(part, (node.__pydantic_extra__ or {}).get(part))
            else:
                node = node.get(part) if isinstance(node, dict) else None
        return dict(node) if isinstance(node, dict) else {}

    @property
    def storage_target(self) -> str:
        """The SQLite path or database URL the store opens."""
        if self.storage.url:
            return self.storage.url
        if self.storage.type == "memory":
            return ":memory:"
        return self.storage.path or str(default_data_dir() / "pluginsdk.db")

    def redacted(self) -> dict[str, Any]:
        """The configuration for display: every field the model marks SECRET is `***`, a group no model
        describes (a third party's driver without a settings model) has every value `***`, and the
        credentials in every other text (URL passwords, DSN `password=`) are masked."""
        read_all(self)
        shown: dict[str, Any] = masked(Settings, self.model_dump(mode="json", by_alias=True))
        return shown
