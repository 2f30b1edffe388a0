"""`pluginsdk slurm ...`: the power-saving programs, the worker, the reconcile step and `slurm.conf` help.

Every failure is the one error envelope, as one JSON line on stderr (stdout is data: `config`'s lines,
`reconcile`'s repairs), and an exit code docs/cli.md lists: 1 the work failed (a configuration error, the
controller unreachable, the engine's refusal), 2 the command line is wrong (a HOSTLIST that does not read).
A resume that fails marks its nodes down at once, so Slurm requeues the job instead of waiting out
ResumeTimeout.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from ...cli import Context
    from ...config import Settings
    from ...errors import SDKError

__all__ = ["slurm"]


@click.group()
def slurm() -> None:
    """Slurm cloud bursting: the power-saving and reboot programs, reconcile, slurm.conf lines.

    ResumeProgram, SuspendProgram, ResumeFailProgram and RebootProgram (`scripts/slurm/`) call these."""


def _settings(ctx: Context) -> Settings:
    from ...config import load_settings

    return load_settings(config_path=ctx.options.get("config"))


def _fail(err: SDKError) -> NoReturn:
    """The envelope on stderr; exit 2 for a command line that is wrong (VALIDATION_ERROR), else 1."""
    from ...cli._exit import ERROR, USAGE
    from ...cli._output import fail_on_stderr

    fail_on_stderr(err.to_envelope(), USAGE if err.code == "VALIDATION_ERROR" else ERROR)


def _nodes(hostlist: str) -> list[str]:
    """The nodes of the HOSTLIST argument; a usage error (exit 2) when it does not read."""
    from ...errors import ValidationError
    from .programs import expand

    try:
        return expand(hostlist)
    except ValueError as exc:
        _fail(ValidationError(str(exc), details={"field": "hostlist", "value": hostlist[:200]}))


def _program(ctx: Context, action: str, hostlist: str) -> None:
    """Record one program call and start the worker. A failure is logged to the log file (when the settings
    say where it is) and is the envelope on stderr, exit 1; a resume's or reboot's nodes are marked down
    first, with the cause as the reason (Slurm reads only the exit code)."""
    import logging

    from ...errors import SDKError
    from . import programs

    nodes = _nodes(hostlist)
    log = logging.getLogger("pluginsdk.schedulers.slurm")
    logging.getLogger("pluginsdk").addHandler(logging.NullHandler())  # stderr is the envelope's alone
    settings: Settings | None = None
    try:
        try:
            settings = _settings(ctx)
        except SDKError:
            settings = _without_nodesets(ctx)  # where to log, which scontrol: what still reads
            raise
        finally:
            if settings is not None:
                programs.log_to(programs.paths(settings)[1])
        programs.record(settings, action, nodes, hostlist, os.environ.get("SLURM_RESUME_FILE"))  # type: ignore[arg-type]
        programs.start_worker(ctx.options.get("config"), programs.paths(settings)[1])
    except Exception as exc:
        err = exc if isinstance(exc, SDKError) else SDKError(f"{action} {hostlist} failed: {exc}")
        log.error("%s %s failed: %s", action, hostlist, err.message, exc_info=not isinstance(exc, SDKError))
        if action in ("resume", "reboot"):
            _down(settings, nodes, f"{action} failed: {err.message}")
        _fail(err)


def _without_nodesets(ctx: Context) -> Settings | None:
    """The settings with the node sets left out (when they are what does not load), or None."""
    from ...config import load_settings
    from ...errors import SDKError

    try:
        return load_settings(config_path=ctx.options.get("config"), overrides={"slurm.nodesets": []})
    except SDKError:
        return None


def _down(settings: Settings | None, nodes: list[str], reason: str) -> None:
    """Mark `nodes` down with `reason`, best effort: the configured `scontrol`, else the usual one."""
    import asyncio
    import logging
    import shutil

    from ...config import SlurmSettings
    from .scontrol import Scontrol

    path = settings.slurm.scontrol if settings else SlurmSettings().scontrol
    if settings is None and not os.path.exists(path):
        path = shutil.which("scontrol") or path
    try:
        asyncio.run(Scontrol(path).down(nodes, reason))
    except Exception as exc:  # the envelope says what failed; this was the courtesy
        logging.getLogger("pluginsdk.schedulers.slurm").warning("could not mark %s down: %s", nodes, exc)


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


@slurm.command("reboot")
@click.argument("hostlist")
@click.argument("features", required=False)
@click.pass_obj
def reboot(ctx: Context, hostlist: str, features: str | None) -> None:
    """RebootProgram (with SlurmctldParameters=reboot_from_controller): replace the machine of each node of
    HOSTLIST by a new one under the same node name (returns at once; FEATURES, Slurm's second argument, is
    not used)."""
    _program(ctx, "reboot", hostlist)


@slurm.command("work")
@click.pass_obj
def work(ctx: Context) -> None:
    """Do the work the programs spooled, then exit (started by the programs; safe to run by hand)."""
    import asyncio
    import logging
    import sys

    from ...errors import SDKError
    from . import programs

    try:
        settings = _settings(ctx)
        where, log_file = programs.paths(settings)
        if not sys.stderr.isatty():
            programs.log_to(log_file)
        asyncio.run(_drain(ctx, where))
    except SDKError as exc:
        logging.getLogger("pluginsdk.schedulers.slurm").error("worker stopped: %s", exc.to_envelope())
        _fail(exc)


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
    """Repair what Slurm and the engine disagree on, mark the machines of registered nodes ready
    (docs/schedulers.md, "Slurm: reconcile"); prints each repair as a JSON line."""
    import asyncio
    import json

    from ...errors import SDKError
    from . import programs

    async def go(settings: Settings) -> list[dict[str, str]]:
        from ...sdk import PluginSDK
        from .reconcile import reconcile as run
        from .worker import Worker, exclusive

        where, _ = programs.paths(settings)
        async with PluginSDK(settings=settings, backend=ctx.options.get("backend")) as sdk:
            with exclusive(where, wait=True):  # a dead worker's spooled work first (after a live one's)
                await Worker(sdk, where).drain()
            return await run(sdk.execute, settings.slurm, registration_timeout or float(settings.slurm.resume_timeout))

    try:
        fixes = asyncio.run(go(_settings(ctx)))
    except SDKError as exc:
        _fail(exc)
    for fix in fixes:
        click.echo(json.dumps(fix))


@slurm.command("config")
@click.pass_obj
def config(ctx: Context) -> None:
    """Print the slurm.conf lines for the configured node sets (CPUs and memory from the instance types);
    refuses (nothing on stdout) a configuration slurmctld would not take."""
    from ...errors import SDKError
    from .conf import slurm_conf

    try:
        text = slurm_conf(_settings(ctx))
    except SDKError as exc:
        _fail(exc)
    click.echo(text, nl=False)
