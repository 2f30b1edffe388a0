"""`pluginsdk worker`: the engine's periodic tasks as a long-running service, without a REST server.

HostFactory, LSF and Slurm installs run the CLI (or the power-saving programs) and have no server, yet
something must settle requests left half way, read the providers' interruption queues and repair what Slurm
and the engine disagree on. This command starts the local engine with its background loop — its own
reconcile pass, plus the schedulers' tasks (`pluginsdk.schedulers.periodic_tasks`) — and waits for SIGTERM
or SIGINT, then stops the loop and closes the store (exit 0). docs/cli.md and docs/schedulers.md ("Slurm for
production") show the systemd unit (`scripts/systemd/pluginsdk-worker.service`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..config import Settings
    from . import Context

__all__ = ["worker"]


@click.command("worker")
@click.pass_obj
def worker(ctx: Context) -> None:
    """Run the periodic tasks (reconcile, interruption queues, Slurm) until SIGTERM.

    Request reconciliation, the providers' interruption queues and the Slurm reconcile where node sets are
    configured: the service for installs without a REST server (HostFactory, LSF, Slurm)."""
    import asyncio

    from ..config import load_settings
    from ..errors import SDKError
    from ._exit import ERROR
    from ._output import fail_on_stderr

    try:
        settings = load_settings(
            config_path=ctx.options.get("config"), overrides={"logging.level": ctx.options.get("log_level")}
        )
        asyncio.run(serve(settings))
    except SDKError as exc:
        fail_on_stderr(exc.to_envelope(), ERROR)


async def serve(settings: Settings) -> None:
    """Run the periodic tasks on a started local engine until SIGTERM or SIGINT."""
    import asyncio
    import os
    import signal

    from ..backend import load_backend
    from ..logs import configure
    from ..schedulers import periodic_tasks

    configure(settings.logging.level, settings.logging.format, settings.logging.file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    backend = load_backend("local", settings, background=True, periodic=periodic_tasks(settings))
    await backend.start()
    try:
        tasks = getattr(getattr(backend, "engine", None), "periodic", [])
        running = ", ".join(f"{t.name} every {t.every:g} s" for t in tasks if t.every > 0) or "nothing"
        click.echo(f"pluginsdk worker (pid {os.getpid()}) runs: {running}; SIGTERM stops it.", err=True)
        await stop.wait()
    finally:
        await backend.aclose()
    click.echo("pluginsdk worker stopped.", err=True)
