"""Slurm driven by a real `slurmctld`: jobs resume cloud nodes through pluginsdk, nodes register and run
the job, idle nodes are suspended and their machines returned, failures put nodes down with our reason at
once, all-or-nothing and best effort per job, a node that never registers, a worker that never ran; and for
production: a typo'd or overlapping node set, `scontrol reboot`, registration as readiness, the reconcile
service (`pluginsdk worker`) and the controller unreachable.

One controller for the module (`cluster.py`); each test starts from every node powered down.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from pluginsdk import PluginSDK
from pluginsdk.schedulers.slurm.worker import exclusive
from tests.schedulers.slurm.cluster import NODESETS, Cluster, cluster

__all__ = ["cluster"]

pytestmark = pytest.mark.slow

SLURMD = (
    # a rebooted node's new machine shares this host (and the node's port) with the old one until it stops
    'while pgrep -f "slurmd -D -N $PLUGINSDK_MACHINE_NAME -f {conf}" >/dev/null; do sleep 0.2; done;'
    ' sleep 1; up=$(cut -d. -f1 /proc/uptime); exec unshare --fork --time --boottime -"$up"'
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


NODES = ("cloud1", "cloud2", "cloud3", "cloud4", "bad1", "bad2", "mute1")


def _at_rest(node: dict[str, str]) -> bool:
    """Powered down, idle, and with no reason but the reset's (as a fresh controller has them)."""
    return node["State"] == "IDLE+CLOUD+POWERED_DOWN" and (not node["Reason"] or node["Reason"].startswith("reset"))


@pytest.fixture
def fresh(cluster: Cluster) -> Cluster:
    """Every node powered down and back in service, no machine left, the default pluginsdk settings."""
    cluster.write()
    _templates(cluster)
    cluster.run("scancel", "--user=root", check=False)
    used = [n for n in NODES if not _at_rest(cluster.node(n))]
    if used:  # a node left powered down and idle by the last test is at rest already: powering it down waits ~6 s
        cluster.scontrol("update", f"nodename={','.join(used)}", "state=power_down_force", "reason=reset")
        cluster.until("every node powered down", lambda: all(_at_rest(cluster.node(n)) for n in used), timeout=60)
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


def _envelope(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in out.stderr, out.stderr
    envelope: dict[str, Any] = json.loads(out.stderr.strip().splitlines()[-1])
    assert envelope["success"] is False, envelope
    return envelope


def test_a_typo_in_a_node_set_is_refused_and_the_job_is_requeued_at_once(fresh: Cluster) -> None:
    """`nodes: "cloud[1-"`: `slurm config` and `slurm reconcile` refuse it naming the key, and the resume program
    Slurm runs fails at once with the nodes down (our reason), so the job is requeued, not left waiting out
    ResumeTimeout (60 s); no spool file is left for a worker to crash on."""
    c = fresh
    c.write(nodesets=[{"nodes": "cloud[1-", "template": "cpu"}])
    for args in (("slurm", "config"), ("slurm", "reconcile")):
        out = c.pluginsdk(*args, check=False)
        assert out.returncode == 1 and out.stdout == "", out
        assert _envelope(out)["details"]["field"] == "slurm.nodesets.0.nodes"
    job = c.run("sbatch", "--parsable", "-N1", "-p", "burst", "--wrap", "hostname").stdout.strip()
    reason = c.until(
        "a pluginsdk reason on a node",
        lambda: next(
            (c.node(f"cloud{i}")["Reason"] for i in (1, 2, 3, 4) if "pluginsdk:" in c.node(f"cloud{i}")["Reason"]), ""
        ),
        timeout=20,
    )
    assert "resume failed" in reason and "slurm.nodesets.0.nodes" in reason, reason
    c.until("the job requeued", lambda: int(c.job(job).get("Restarts", "0")) >= 1, timeout=15)
    assert not list(c.spool.glob("*.json"))
    c.write()
    assert not _machines(c)


def test_overlapping_node_sets_are_refused_before_slurmctld_sees_them(fresh: Cluster) -> None:
    """slurmctld stops on `fatal: Duplicated NodeName` when a node is on two NodeName lines: `slurm config` never
    prints them; the configuration is refused naming the second set."""
    c = fresh
    c.write(nodesets=[{"nodes": "cloud[1-4]", "template": "cpu"}, {"nodes": "cloud[3-4]", "template": "mute"}])
    out = c.pluginsdk("slurm", "config", check=False)
    assert out.returncode == 1 and out.stdout == ""
    envelope = _envelope(out)
    assert envelope["details"]["field"] == "slurm.nodesets.1.nodes" and "cloud3" in envelope["error"]
    c.write()
    printed = c.pluginsdk("slurm", "config", check=False)
    assert printed.returncode == 1 and _envelope(printed)["details"]["field"] == "slurm.nodesets.1.template"
    c.write(nodesets=[n for n in NODESETS if n["template"] != "missing"])
    text = c.pluginsdk("slurm", "config").stdout
    names = [line.split()[0] for line in text.splitlines() if line.startswith("NodeName=")]
    assert names == ["NodeName=cloud[1-4]", "NodeName=mute1"] and "RebootProgram=" in text


def test_scontrol_reboot_replaces_the_machine_under_the_same_node_name(fresh: Cluster) -> None:
    c = fresh
    out = c.run("srun", "-N1", "-p", "burst", "printenv", "SLURMD_NODENAME", timeout=90)
    node = out.stdout.strip()
    (before,) = [m for m in _machines(c) if m.name == node]
    c.scontrol("reboot", node)
    after = c.until(
        "a new machine for the node",
        lambda: [m for m in _machines(c) if m.name == node and m.machine_id != before.machine_id],
        timeout=30,
    )
    assert len(after) == 1
    c.until(
        "the node back up, rebooted",
        lambda: (
            not {"REBOOT_ISSUED", "REBOOT_REQUESTED", "DOWN", "NOT_RESPONDING"} & set(c.node(node)["State"].split("+"))
        ),
        timeout=60,
    )
    assert before.machine_id not in {m.machine_id for m in _machines(c)}  # the old one returned


def test_registration_is_the_readiness_signal_and_the_worker_runs_the_reconcile(fresh: Cluster) -> None:
    """A template that requires a readiness signal, machines that never send one themselves (`ready_rate: 0`),
    no startup script calling `machines ready`: `pluginsdk worker` (no REST server) reconciles, sees the node
    registered and marks its machine ready, so its request completes instead of failing at the boot timeout;
    SIGTERM stops the worker cleanly."""
    c = fresh
    c.write(local={"ready_rate": 0}, reconcile_interval=1)
    boot = {"boot": {"requires_ready": True, "timeout_seconds": 40, "max_failures": 3}}

    async def template(configuration: dict[str, Any]) -> None:
        async with PluginSDK(config_path=str(c.pconf)) as sdk:
            await sdk.update_template("cpu", configuration=configuration)

    async def request_of(node: str) -> str:
        async with PluginSDK(config_path=str(c.pconf)) as sdk:
            (machine,) = [m async for m in sdk.iterate("list_machines", active_only=True) if m.name == node]
            return str((await sdk.get_request_status([machine.request_id])).requests[0].status)

    asyncio.run(template(boot))
    worker = subprocess.Popen(
        [sys.executable, "-m", "pluginsdk", "--config", str(c.pconf), "worker"],
        env=c.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        job = c.run("srun", "-N1", "-p", "burst", "printenv", "SLURMD_NODENAME", timeout=90, check=False)
        assert job.returncode == 0, (job.stderr, c.log())
        node = job.stdout.strip()
        c.until("its request completed", lambda: asyncio.run(request_of(node)) == "completed", timeout=20)
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
        asyncio.run(template({}))
    assert worker.returncode == 0 and "Traceback" not in err and "slurm reconcile every 1 s" in err, err


def test_reconcile_with_the_controller_unreachable_prints_the_envelope(fresh: Cluster) -> None:
    """From cron, with the controller down: one envelope on stderr, exit 1, nothing on stdout, no traceback."""
    c = fresh
    elsewhere = c.where / "unreachable.conf"
    port = next(line for line in c.conf.read_text().splitlines() if line.startswith("SlurmctldPort="))
    elsewhere.write_text(c.conf.read_text().replace(port, "SlurmctldPort=9"))
    start = time.monotonic()
    out = c.run(
        sys.executable, "-m", "pluginsdk", "--config", str(c.pconf), "slurm", "reconcile", check=False, timeout=120
    )
    assert out.returncode == 0  # the real controller answers
    env = c.env | {"SLURM_CONF": str(elsewhere)}
    down = subprocess.run(
        [sys.executable, "-m", "pluginsdk", "--config", str(c.pconf), "slurm", "reconcile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert down.returncode == 1 and down.stdout == "", (down, time.monotonic() - start)
    envelope = _envelope(down)
    assert envelope["error_code"] == "SCHEDULER_UNAVAILABLE" and "controller" in envelope["error"], envelope


# Last in the module: each leaves nodes down for capacity, which the next test's reset waits ~30 s to power down.
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
