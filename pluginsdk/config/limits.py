"""`provider.capacity` and `provider.quotas`: what only a launch reads of `provider`. Built on first use
(`LazyGroups`): a CLI call that launches nothing reads neither."""

from typing import Annotated

from pydantic import Field

from .group import SettingsGroup

__all__ = ["CapacitySettings", "QuotaSettings"]


class CapacitySettings(SettingsGroup):
    """`provider.capacity`: how long an offering that failed for capacity is skipped (docs/providers.md)."""

    cooldown_seconds: float = Field(300.0, gt=0)
    """First cooldown after a capacity failure; it doubles on each failure in a row."""
    max_cooldown_seconds: float = Field(1800.0, gt=0)
    """Longest cooldown."""
    probe_seconds: float = Field(60.0, gt=0)
    """How long one half-open probe launch holds the offering before another probe may go."""


class QuotaSettings(SettingsGroup):
    """`provider.quotas`: limits checked when a request is made (docs/providers.md)."""

    max_active: dict[str, Annotated[int, Field(ge=0)]] = {}
    """Provider instance -> most machines it holds at once."""
    machines_per_user: int | None = Field(None, ge=1)
    """Most machines one user may request within `window_seconds`."""
    window_seconds: float = Field(3600.0, gt=0)
    retry_seconds: int = Field(60, ge=1)
    """Retry-After of a refusal by a limit on machines at once (machines free when they are returned)."""
