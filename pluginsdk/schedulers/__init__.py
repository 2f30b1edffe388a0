"""Scheduler strategies: how CLI input is read and output is shaped for the caller.

`default` is for people and scripts (snake_case, the full record). `hostfactory` (IBM Spectrum Symphony
HostFactory) and `lsf` (IBM Spectrum LSF resource connector) read the scheduler's JSON input (`-f FILE`
or `-d JSON`) and print the JSON the scheduler's provider scripts must answer. The typed SDK result
never changes: a strategy only parses input into operation parameters and renders results.

Strategies import lazily (`get_strategy`), because each scheduler poll is a fresh CLI process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings
    from ..periodic import PeriodicTask
    from ._base import Strategy

__all__ = ["STRATEGIES", "get_strategy", "periodic_tasks"]

STRATEGIES = ("default", "hostfactory", "lsf")
"""Accepted values of `--scheduler` / `scheduler.type`."""


def get_strategy(name: str | None) -> Strategy:
    """The strategy called `name` (None: default); an unknown name raises ConfigurationError."""
    if name in (None, "", "default"):
        from ._base import Strategy

        return Strategy()
    if name == "hostfactory":
        from .hostfactory import HostFactoryStrategy

        return HostFactoryStrategy()
    if name == "lsf":
        from .lsf import LsfStrategy

        return LsfStrategy()
    from ..errors import ConfigurationError

    raise ConfigurationError(
        f"Unknown scheduler strategy {name!r}; use one of {', '.join(STRATEGIES)}.", key="scheduler.type"
    )


def periodic_tasks(settings: Settings) -> list[PeriodicTask]:
    """The schedulers' work a long-lived process has its engine repeat (the REST server, `pluginsdk worker`):
    Slurm's reconcile when node sets are configured. HostFactory and LSF poll the CLI, so they add none."""
    if not settings.slurm.nodesets:
        return []
    from .slurm.reconcile import reconcile_task

    task = reconcile_task(settings)
    return [task] if task is not None else []
