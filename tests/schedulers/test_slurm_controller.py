"""Slurm driven by a real `slurmctld`: jobs resume cloud nodes through pluginsdk, nodes register and run
the job, idle nodes are suspended and their machines returned, failures put nodes down with our reason at
once, all-or-nothing and best effort per job, a node that never registers, and a worker that never ran.

One controller for the module (`slurm_cluster.py`); each test starts from every node powered down.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest

from pluginsdk import PluginSDK
from pluginsdk.schedulers.slurm.worker import exclusive
from tests.schedulers.slurm_cluster import Cluster, cluster

__all__ = ["cluster"]

pytestmark = pytest.mark.slow

SLURMD = (
    'sleep 1; up=$(cut -d. -f1 /proc/uptime); exec unshare --fork --time --boottime -"$up"'
    ' /usr/sbin/slurmd -D -N "$PLUGINSDK_MACHINE_NAME" -f {conf}'
)


def _machines(c: Cluster, *, return_them: bool = False) -> list[Any]:
    async def go() -> list[Any]:
        async with PluginSDK(config_path=str(c.pconf)) as sdk:
            found = [m async for m in sdk.iterate("list_machines", active_only=True, limit=1000)]
            if return_them and found:
                await sdk.create_return_request(machine_ids=[m.machine_id for m in found], force_return=True)
            return found

    return asyncio.run(go())


def _templates(c: Cluster) -> None:
    async def go() -> None:
        async with PluginSDK(config_path=str(c.pconf)) as sdk:
            existing = {t.template_id for t in (await sdk.list_templates()).templates}
            for tid, user_data in (("cpu", SLURMD.format(conf=c.conf)), ("mute", "exec sleep 600")):
                if tid not in existing:
                    await sdk.create_template(
                        template_id=tid, image_id="img-1", instance_type="t3.small", user_data=user_data
                    )

    asyncio.run(go())


@pytest.fixture
def fresh(cluster: Cluster) -> Cluster:
    """Every node powered down and back in service, no machine left, the default pluginsdk settings."""
    cluster.write()
    _templates(cluster)
    cluster.run("scancel", "--user=root", check=False)
    cluster.scontrol("update", "nodename=cloud[1-4],bad[1-2],mute1", "state=power_down_force", "reason=reset")
    cluster.until(
        "every node powered down",
        lambda: all("POWERED_DOWN" in cluster.node(n)["State"] for n in ("cloud1", "cloud2", "cloud3", "cloud4")),
        timeout=60,
    )
    cluster.until("no machine left", lambda: not _machines(cluster, return_them=True), timeout=30)
    return cluster


def test_job_runs_on_resumed_nodes_and_idle_nodes_are_returned(fresh: Cluster) -> None:
    c = fresh
    out = c.run("srun", "-N2", "-p", "burst", "hostname", timeout=90)
    assert len(out.stdout.split()) == 2, out
    names = {m.name for m in _machines(c)}
    assert len(names & {"cloud1", "cloud2", "cloud3", "cloud4"}) == 2, names
    # idle for SuspendTime: Slurm calls the suspend program, the machines are returned, slurmd stops
    c.until("the idle nodes' machines returned", lambda: not _machines(c), timeout=60)
    pattern = f"slurmd -D -N .* -f {c.conf}"
    c.until("slurmd stopped", lambda: subprocess.run(["pgrep", "-f", pattern], check=False).returncode)


def test_a_template_that_fails_puts_its_nodes_down_and_the_job_is_requeued(fresh: Cluster) -> None:
    c = fresh
    job = c.run("sbatch", "--parsable", "-N1", "-p", "bad", "--wrap", "hostname").stdout.strip()
    reason = c.until(
        "a pluginsdk reason on the node",
        lambda: next((c.node(n)["Reason"] for n in ("bad1", "bad2") if "pluginsdk:" in c.node(n)["Reason"]), ""),
        timeout=20,  # far under ResumeTimeout (60 s)
    )
    assert "template missing" in reason and "not found" in reason, reason
    c.until("the job requeued", lambda: int(c.job(job).get("Restarts", "0")) >= 1, timeout=10)
    assert c.job(job)["JobState"] == "PENDING"


def test_all_or_nothing_gives_back_what_a_job_got(fresh: Cluster) -> None:
    c = fresh
    c.write(all_or_nothing=True, local={"capacity": 2})
    job = c.run("sbatch", "--parsable", "-N3", "-p", "burst", "--wrap", "hostname").stdout.strip()
    c.until(
        "a node down for capacity", lambda: any("pluginsdk:" in c.node(f"cloud{i}")["Reason"] for i in (1, 2, 3, 4))
    )
    c.until("the job's other machines returned", lambda: not _machines(c), timeout=30)
    c.until("the job requeued", lambda: int(c.job(job).get("Restarts", "0")) >= 1, timeout=10)
    reasons = " ".join(c.node(f"cloud{i}")["Reason"] for i in (1, 2, 3, 4))
    assert "InsufficientInstanceCapacity" in reasons and "another node of the job" in reasons, reasons


def test_best_effort_keeps_what_came_up(fresh: Cluster) -> None:
    c = fresh
    c.write(all_or_nothing=False, local={"capacity": 2})
    c.run("sbatch", "--parsable", "-N3", "-p", "burst", "--wrap", "hostname")
    c.until("a node down for capacity", lambda: any("Capacity" in c.node(f"cloud{i}")["Reason"] for i in (1, 2, 3, 4)))
    c.until("two machines running", lambda: len([m for m in _machines(c) if m.status == "running"]) == 2)


def test_a_node_that_never_registers_is_repaired_by_reconcile(fresh: Cluster) -> None:
    c = fresh
    c.run("sbatch", "--parsable", "-N1", "-p", "mute", "--wrap", "hostname")
    c.until("mute1's machine running", lambda: [m for m in _machines(c) if m.name == "mute1" and m.status == "running"])

    def repaired() -> list[dict[str, str]]:
        out = c.pluginsdk("slurm", "reconcile", "--registration-timeout", "1").stdout
        return [f for f in map(json.loads, out.splitlines()) if f["node"] == "mute1"]

    (fix,) = c.until("reconcile repairs mute1", repaired, timeout=20)
    assert fix["case"] == "never registered" and fix["action"] == "return, down"
    c.until("its machine returned", lambda: not [m for m in _machines(c) if m.name == "mute1"])
    assert "did not register" in c.node("mute1")["Reason"]


def test_work_left_by_a_worker_that_never_ran_is_finished_by_reconcile(fresh: Cluster) -> None:
    c = fresh
    with exclusive(c.spool) as held:  # the worker the program starts finds the lock taken: as if killed at once
        assert held
        out = subprocess.Popen(["srun", "-N1", "-p", "burst", "hostname"], env=c.env, stdout=subprocess.PIPE, text=True)
        c.until("the resume spooled", lambda: list(c.spool.glob("*.json")), timeout=20)
        assert not _machines(c)
    c.pluginsdk("slurm", "reconcile")
    assert not list(c.spool.glob("*.json"))
    stdout, _ = out.communicate(timeout=60)
    assert len(stdout.split()) == 1
