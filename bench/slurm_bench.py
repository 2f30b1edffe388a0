"""Slurm power-saving programs: how long Slurm waits on them, and how soon the provider is asked.

`python bench/slurm_bench.py [--sizes 1 100 1000] [--repeats 3]`. For each size N, on a fresh SQLite store
with the `local` provider (node set `cloud[1-N]` -> one template, `scontrol` = /bin/true):
- resume: wall time of `pluginsdk slurm resume cloud[1-N]` as Slurm runs it (a fresh process), and the
  time from its start until the provider holds a launched machine for every node (rows of `local_instances`,
  read from the store file);
- suspend: the same program time for `slurm suspend`, and the time until every machine is being terminated.
Medians of the repeats (min in brackets), milliseconds. Targets (docs/benchmarks.md): resume program
<= 300 ms at 1,000 nodes; every launch asked for within 2 s on the local provider.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _run(config: Path, *args: str) -> float:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pluginsdk", "--config", str(config), *args],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def _until(db: Path, sql: str, n: int, start: float, limit: float = 60) -> float:
    while time.perf_counter() - start < limit:
        try:
            with sqlite3.connect(db) as conn:
                if conn.execute(sql).fetchone()[0] >= n:
                    return time.perf_counter() - start
        except sqlite3.OperationalError:
            pass
        time.sleep(0.005)
    return float("nan")


def one(n: int) -> tuple[float, float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        db = where / "store.db"
        config = where / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "storage": {"path": str(db)},
                    "provider": {"type": "local", "local": {"boot_delay": 30, "capacity": 100_000}},
                    "slurm": {
                        "spool_dir": str(where / "spool"),
                        "scontrol": "/bin/true",
                        "nodesets": [{"nodes": f"cloud[1-{n}]", "template": "cpu"}],
                    },
                }
            )
        )
        _run(config, "templates", "create", "--template-id", "cpu", "--image-id", "img-1")
        start = time.perf_counter()
        resume = _run(config, "slurm", "resume", f"cloud[1-{n}]")
        launched = _until(db, "SELECT COUNT(*) FROM local_instances WHERE host_name IS NOT NULL", n, start)
        time.sleep(0.5)  # the worker watching the launches keeps the lock; suspend's own worker waits for it
        start = time.perf_counter()
        suspend = _run(config, "slurm", "suspend", f"cloud[1-{n}]")
        returned = _until(db, "SELECT COUNT(*) FROM local_instances WHERE terminate_at IS NOT NULL", n, start)
        subprocess.run(["pkill", "-f", "--", f"--config {config} slurm work"], check=False)
        return resume, launched, suspend, returned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| nodes | resume program ms | all launches asked ms | suspend program ms | all returns asked ms |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        runs = [one(n) for _ in range(args.repeats)]
        cells = []
        for i in range(4):
            values = [r[i] * 1000 for r in runs]
            cells.append(f"{statistics.median(values):,.0f} ({min(values):,.0f})")
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
