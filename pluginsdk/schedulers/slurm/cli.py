"""`pluginsdk slurm ...`: the power-saving programs, the worker, the reconcile step and `slurm.conf` help."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ...cli import Context
    from ...config import Settings

__all__ = ["slurm"]


@click.group()
def slurm() -> None:
    """Slurm cloud bursting: ResumeProgram, SuspendProgram, ResumeFailProgram, reconcile, slurm.conf lines."""


def _settings(ctx: Context) -> Settings:
    from ...config import load_settings

    return load_settings(config_path=ctx.options.get("config"))


def _program(ctx: Context, action: str, hostlist: str) -> None:
    """Record one program call and start the worker; any failure is logged and exits 1 (Slurm reads only the
    exit code)."""
    import logging

    from . import programs

    settings = _settings(ctx)
    _, log_file = programs.paths(settings)
    programs.log_to(log_file)
    try:
        programs.record(settings, action, hostlist, os.environ.get("SLURM_RESUME_FILE"))  # type: ignore[arg-type]
        programs.start_worker(ctx.options.get("config"), log_file)
    except Exception:
        logging.getLogger("pluginsdk.schedulers.slurm").exception("%s %s failed", action, hostlist)
        sys.exit(1)


@slurm.command("resume")
@click.argument("hostlist")
@click.pass_obj
def resume(ctx: Context, hostlist: str) -> None:
    """ResumeProgram: launch a machine for each node of HOSTLIST (reads SLURM_RESUME_FILE; returns at once)."""
    _program(ctx, "resume", hostlist)


@slurm.command("suspend")
@click.argument("hostlist")
@click.pass_obj
def suspend(ctx: Context, hostlist: str) -> None:
    """SuspendProgram: return the machines of the nodes of HOSTLIST (returns at once)."""
    _program(ctx, "suspend", hostlist)


@slurm.command("resume-fail")
@click.argument("hostlist")
@click.pass_obj
def resume_fail(ctx: Context, hostlist: str) -> None:
    """ResumeFailProgram: terminate and release the machines of nodes that did not come up (returns at once)."""
    _program(ctx, "resume_fail", hostlist)


@slurm.command("work")
@click.pass_obj
def work(ctx: Context) -> None:
    """Do the work the programs spooled, then exit (started by the programs; safe to run by hand)."""
    from . import programs

    settings = _settings(ctx)
    where, log_file = programs.paths(settings)
    if not sys.stderr.isatty():
        programs.log_to(log_file)
    asyncio.run(_drain(ctx, where))


async def _drain(ctx: Context, where: Any) -> None:
    from ...sdk import PluginSDK
    from . import spool
    from .worker import Worker, exclusive

    while True:
        with exclusive(where) as mine:
            if not mine:
                return  # the running worker takes whatever is spooled
            async with PluginSDK(config_path=ctx.options.get("config"), backend=ctx.options.get("backend")) as sdk:
                await Worker(sdk, where).drain()
        # spooled after the last look but before the lock was let go: nobody else will take it
        if not any(True for _ in spool.pending(where)):
            return


@slurm.command("reconcile")
@click.option("--registration-timeout", type=float, default=None, help="Seconds a node may take to register.")
@click.pass_obj
def reconcile(ctx: Context, registration_timeout: float | None) -> None:
    """Repair what Slurm and the engine disagree on (docs/schedulers.md, "Slurm: reconcile"); prints each fix."""
    import json

    from . import programs

    settings = _settings(ctx)
    where, _ = programs.paths(settings)

    async def go() -> list[dict[str, str]]:
        from ...sdk import PluginSDK
        from .reconcile import reconcile as run
        from .worker import Worker, exclusive

        async with PluginSDK(config_path=ctx.options.get("config"), backend=ctx.options.get("backend")) as sdk:
            with exclusive(where, wait=True):  # a dead worker's spooled work first (after a live one's)
                await Worker(sdk, where).drain()
            return await run(sdk.execute, settings.slurm, registration_timeout or float(settings.slurm.resume_timeout))

    for fix in asyncio.run(go()):
        click.echo(json.dumps(fix))


@slurm.command("config")
@click.pass_obj
def config(ctx: Context) -> None:
    """Print the slurm.conf lines for the configured node sets (CPUs and memory from the instance types)."""
    from .conf import slurm_conf

    click.echo(slurm_conf(_settings(ctx), ctx.options.get("config")), nl=False)
