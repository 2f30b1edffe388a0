"""A real Slurm controller on loopback whose cloud nodes are launched through pluginsdk.

`slurmctld` (Debian's package) runs in the foreground with a slurm.conf written here; its ResumeProgram,
SuspendProgram and ResumeFailProgram are the shipped `scripts/slurm/*.sh`, configured by a `pluginsdk.env`
beside them, as docs/schedulers.md tells an operator to do. A node's machine (local provider with
`run_user_data`) starts `slurmd -D -N NODE` in its own time namespace, so its boot time is later than the
resume request (docs: shared reference "Slurm"). Everything skips, with the reason, where the packages or
root are missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
NEEDED = ("slurmctld", "slurmd", "scontrol", "srun", "sbatch", "munged", "unshare")


def missing() -> str | None:
    """Why a real controller cannot run here, or None."""
    absent = [p for p in NEEDED if shutil.which(p) is None and not Path("/usr/sbin", p).exists()]
    if absent:
        return f"Slurm packages not installed (missing {', '.join(absent)}); .ci/run installs them"
    if os.geteuid() != 0:
        return "the test controller runs its nodes as root (SlurmUser=root)"
    return None


def _munge() -> None:
    """Start munged unless it runs (the packaged key in /etc/munge)."""
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True, check=False).returncode == 0:
        return
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True, timeout=10)


def _free_ports(count: int) -> int:
    """A base port with `count` free consecutive ports above it."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65000:
            continue
        try:
            for p in range(base, base + count):
                with socket.socket() as t:
                    t.bind(("127.0.0.1", p))
        except OSError:
            continue
        return base
    raise RuntimeError("no free port range")


NODESETS = [
    {"nodes": "cloud[1-4]", "template": "cpu", "partition": "burst"},
    {"nodes": "bad[1-2]", "template": "missing", "partition": "bad"},
    {"nodes": "mute1", "template": "mute", "partition": "mute"},
]


class Cluster:
    """The controller, its configuration and pluginsdk's, and helpers to read both sides."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.conf = where / "slurm.conf"
        self.programs = where / "programs"
        self.pconf = where / "pluginsdk.yaml"
        self.spool = where / "spool"
        self.env = os.environ | {"SLURM_CONF": str(self.conf)}
        self.ctld: subprocess.Popen[bytes] | None = None

    # -- set-up -------------------------------------------------------------------------------------------

    def write(self, **slurm: Any) -> None:
        """(Re)write pluginsdk's configuration; the programs read it on their next call."""
        local = {"boot_delay": 0.3, "terminate_delay": 0.2, "run_user_data": True}
        local |= {"user_data_log_dir": str(self.where / "machines")} | slurm.pop("local", {})
        config = {
            "storage": {"path": str(self.where / "store.db")},
            "provider": {"type": "local", "local": local},
            "slurm": {
                "spool_dir": str(self.spool),
                "scontrol": shutil.which("scontrol") or "/usr/bin/scontrol",
                "nodesets": NODESETS,
                "resume_timeout": 60,
            }
            | slurm,
        }
        self.pconf.write_text(yaml.safe_dump(config))

    def start(self) -> None:
        for d in ("state", "spool-slurmd", "log", "machines"):
            (self.where / d).mkdir(parents=True, exist_ok=True)
        self.programs.mkdir()
        scripts = list((ROOT / "scripts" / "slurm").glob("*.sh"))
        assert scripts, f"no Slurm programs in {ROOT / 'scripts' / 'slurm'}"
        for script in scripts:
            shutil.copy(script, self.programs / script.name)
        env_lines = [f"PLUGINSDK_BIN='{sys.executable} -m pluginsdk'", f"PLUGIN_CONFIG={self.pconf}"]
        if os.environ.get("PYTHONPATH"):
            env_lines += [f"PYTHONPATH={os.environ['PYTHONPATH']}", "export PYTHONPATH"]
        (self.programs / "pluginsdk.env").write_text("\n".join(env_lines) + "\n")
        base = _free_ports(2 + 7)
        w = self.where
        self.conf.write_text(
            f"""ClusterName=pluginsdk
SlurmctldHost={socket.gethostname()}(127.0.0.1)
SlurmUser=root
SlurmctldPort={base}
SlurmdPort={base + 1}
AuthType=auth/munge
StateSaveLocation={w}/state
SlurmdSpoolDir={w}/spool-slurmd/%n
SlurmdPidFile={w}/spool-slurmd/slurmd-%n.pid
SlurmctldPidFile={w}/slurmctld.pid
SlurmctldLogFile={w}/log/slurmctld.log
SlurmdLogFile={w}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
ResumeProgram={self.programs}/resume.sh
SuspendProgram={self.programs}/suspend.sh
ResumeFailProgram={self.programs}/resume_fail.sh
RebootProgram={self.programs}/reboot.sh
ResumeTimeout=60
SuspendTime=4
SuspendTimeout=4
ResumeRate=0
SuspendRate=0
SlurmctldParameters=cloud_reg_addrs,idle_on_node_suspend,reboot_from_controller,power_save_interval=1
PrivateData=cloud
NodeName=cloud[1-4] CPUs=1 RealMemory=500 State=CLOUD Port={base + 2}-{base + 5}
NodeName=bad[1-2] CPUs=1 RealMemory=500 State=CLOUD Port={base + 6}-{base + 7}
NodeName=mute1 CPUs=1 RealMemory=500 State=CLOUD Port={base + 8}
PartitionName=burst Nodes=cloud[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=bad Nodes=bad[1-2] MaxTime=INFINITE State=UP
PartitionName=mute Nodes=mute1 MaxTime=INFINITE State=UP
"""
        )
        _munge()
        self.write()
        self.ctld = subprocess.Popen(
            ["slurmctld", "-D", "-c", "-f", str(self.conf)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=open(w / "log" / "slurmctld.err", "wb"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.scontrol("show", "node", "mute1", check=False).returncode == 0:  # nodes loaded, not just up
                return
            time.sleep(0.2)
        raise RuntimeError("slurmctld did not answer: " + self.log())

    def stop(self) -> None:
        if self.ctld is not None:
            self.ctld.terminate()
            self.ctld.wait(10)
        subprocess.run(["pkill", "-f", f"slurmd -D -N .* -f {self.conf}"], check=False)

    # -- reading ------------------------------------------------------------------------------------------

    def run(self, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=timeout, check=check)

    def scontrol(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("scontrol", *args, timeout=20, check=check)

    def node(self, name: str) -> dict[str, str]:
        line = self.scontrol("-o", "show", "node", name, check=False).stdout.strip()
        fields = dict(p.split("=", 1) for p in line.split() if "=" in p)
        fields["Reason"] = line.split("Reason=", 1)[1] if "Reason=" in line else ""
        fields.setdefault("State", "")
        return fields

    def job(self, job_id: str) -> dict[str, str]:
        line = self.scontrol("-o", "show", "job", job_id).stdout.strip()
        return dict(p.split("=", 1) for p in line.split() if "=" in p)

    def pluginsdk(self, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(
            sys.executable, "-m", "pluginsdk", "--config", str(self.pconf), *args, timeout=timeout, check=check
        )

    def log(self) -> str:
        parts = []
        for f in (self.spool / "slurm.log", self.where / "log" / "slurmctld.log", *self.where.glob("log/slurmd-*")):
            if f.exists():
                parts.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-40:]))
        return "\n".join(parts)

    def until(self, what: str, check: Any, timeout: float = 45) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.3)
        raise AssertionError(f"{what} not within {timeout} s\n{self.log()}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = missing()
    if reason:
        pytest.skip(reason)
    c = Cluster(tmp_path_factory.mktemp("slurm"))
    c.start()
    try:
        yield c
    finally:
        c.stop()
