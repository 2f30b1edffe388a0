"""The power-saving programs: record what Slurm asked for, start the worker, return.

Slurm waits on these programs and logs none of their output, so each one does the least it can — expand the
hostlist, read `SLURM_RESUME_FILE` at once (it lives under the controller's /proc/PID/fd and goes away),
write one spool file, start the worker if none runs — and writes what it did to the log file
(`slurm.log_file`). The engine's work (launching, returning, marking nodes down) is the worker's.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import spool

if TYPE_CHECKING:
    from ...config import Settings

__all__ = ["expand", "log_to", "paths", "record", "resume_jobs", "start_worker"]

log = logging.getLogger("pluginsdk.schedulers.slurm")


def _hostlist_module() -> Any:
    try:
        import hostlist
    except ImportError:
        raise RuntimeError("the Slurm programs need python-hostlist: pip install 'pluginsdk[slurm]'") from None
    return hostlist


def expand(hostlist: str) -> list[str]:
    """Node names of a Slurm hostlist expression (`cloud-[1-3,7],gpu[01-02]`), in order, without repeats."""
    _hostlist = _hostlist_module()
    try:
        return list(dict.fromkeys(_hostlist.expand_hostlist(hostlist)))
    except _hostlist.BadHostlist as exc:
        raise ValueError(f"not a hostlist expression: {hostlist!r} ({exc})") from None


def resume_jobs(path: str | None) -> list[spool.Job]:
    """The jobs of a resume file: Slurm 22.05's `jobs[].nodes` or the newer `jobs[].nodes_resume`."""
    if not path:
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
    except (OSError, ValueError) as exc:
        log.warning("resume file %s not read: %s", path, exc)
        return []
    jobs = []
    for job in data.get("jobs") or []:
        names = job.get("nodes_resume") or job.get("nodes") or ""
        jobs.append(spool.Job(int(job["job_id"]), expand(names) if names else []))
    return jobs


def paths(settings: Settings) -> tuple[Path, Path]:
    """(spool directory, log file) of these settings."""
    if settings.slurm.spool_dir:
        where = Path(settings.slurm.spool_dir)
    else:
        from ...config import default_data_dir

        where = default_data_dir() / "slurm"
    return where, Path(settings.slurm.log_file) if settings.slurm.log_file else where / "slurm.log"


def log_to(file: Path) -> None:
    """Send this process's `pluginsdk` log records to `file` (Slurm discards the programs' output)."""
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handler = logging.FileHandler(file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    root = logging.getLogger("pluginsdk")
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def record(
    settings: Settings, action: spool.Action, nodes: list[str], hostlist: str, resume_file: str | None = None
) -> spool.Intent:
    """Write the spool file of one program call (`nodes`: `hostlist` expanded)."""
    where, _ = paths(settings)
    intent = spool.Intent(action, nodes, resume_jobs(resume_file) if action == "resume" else [])
    spool.write(where, intent)
    log.info(
        "%s %s: %d node(s), %d job(s), spooled as %s", action, hostlist, len(intent.nodes), len(intent.jobs), intent.id
    )
    return intent


def start_worker(config_path: str | None, log_file: Path) -> None:
    """Start `pluginsdk slurm work` detached (its own session, output to the log), unless the caller is one."""
    args = [sys.executable, "-m", "pluginsdk"]
    if config_path:
        args += ["--config", config_path]
    with open(log_file, "ab") as out:
        subprocess.Popen(  # noqa: S603 - this interpreter running pluginsdk, no shell
            [*args, "slurm", "work"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def collect(nodes: list[str]) -> str:
    """The hostlist expression of `nodes` (`cloud-[1-3]`), as Slurm's commands take it."""
    return str(_hostlist_module().collect_hostlist(nodes))
