"""The import budget: which modules each cold path of the command line imports, against a committed list.

A scheduler runs `pluginsdk` many times a minute, so what a cold start imports is its cost. Each path below
runs in a fresh interpreter (`python -S -X importtime`: no `site`, so no `.pth` hook of this install is
counted) through the console script's entry point; the modules it imports, and each one's self time in µs
from `-X importtime`, are compared with `tests/import_budget/PATH.txt`. The test compares the set, never the
times (the times are there to say what a module costs when it is added).

    python -m tests.import_budget            # print the differences, exit 1 if any
    python -m tests.import_budget --update   # rewrite the lists from this checkout (commit them)

Run it from the repository root with the venv's python; the update measures each path three times and
records the smallest self time of each module.
"""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PATHS", "Budget", "measure", "read_list", "write_list"]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
UPDATE = "python -m tests.import_budget --update"

PATHS = {
    "help": ["--help"],
    "templates_list": ["--format", "json", "templates", "list"],
    "hostfactory_status": ["--scheduler", "hostfactory", "--format", "json", "requests", "status", "-f", "{status}"],
}
"""Each cold path: the `pluginsdk` arguments (`{status}`: a HostFactory getRequestStatus input file)."""

_CONFIG = "provider:\n  local:\n    boot_delay: 0\n    terminate_delay: 0\n    seed: 1\n"
_SEED = """
import asyncio, json, sys
from pluginsdk import PluginSDK

async def seed():
    async with PluginSDK() as sdk:
        for i in range(3):
            await sdk.create_template(template_id=f"tpl-{i}", image_id="ami-12345678", instance_type="t3.small")
        return [(await sdk.create_request("tpl-0", 2)).request_id]

print(json.dumps({"requests": [{"requestId": i} for i in asyncio.run(seed())]}))
"""
_RUN = """
import sys
sys.path[:0] = {paths!r}
sys.argv = ["pluginsdk", *{args!r}]
from pluginsdk._entry import main
try:
    main()
except SystemExit as exc:
    if exc.code:
        raise
"""
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+\d+ \|( *)(\S+)$")


@dataclass(frozen=True)
class Budget:
    """One path's modules, each with its self import time in µs, and the Python that measured them."""

    python: str
    modules: dict[str, int]


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


@contextmanager
def store() -> Iterator[tuple[dict[str, str], Path]]:
    """A fresh SQLite store with three templates and one request, `local` provider; its environment and the
    HostFactory status input naming the request."""
    with tempfile.TemporaryDirectory(prefix="import-budget-") as tmp:
        work = Path(tmp)
        (work / "plugin.yaml").write_text(_CONFIG)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PLUGIN_", "PYTHON"))}
        env.update(
            PYTHONPATH=str(ROOT),
            PLUGIN_STORAGE_PATH=str(work / "store.db"),
            PLUGIN_CONFIG=str(work / "plugin.yaml"),
            XDG_DATA_HOME=str(work / "xdg"),
        )
        seeded = subprocess.run(
            [sys.executable, "-c", _SEED], env=env, capture_output=True, text=True, timeout=120, check=True
        )
        status = work / "status.json"
        status.write_text(seeded.stdout)
        yield env, status


def measure(name: str, env: dict[str, str], status: Path) -> dict[str, int]:
    """The modules one run of path `name` imports, each with its self time (µs); the run must exit 0."""
    args = [a.replace("{status}", str(status)) for a in PATHS[name]]
    paths = [str(ROOT), *site.getsitepackages()]
    code = _RUN.format(paths=paths, args=args)
    res = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-c", code],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if res.returncode != 0:
        raise RuntimeError(
            f"pluginsdk {' '.join(args)}: exit {res.returncode}\n{res.stdout[-2000:]}{res.stderr[-4000:]}"
        )
    modules: dict[str, int] = {}
    for line in res.stderr.splitlines():
        match = _LINE.match(line)
        if match:
            modules[match.group(3)] = int(match.group(1))
    return modules


def measure_all(runs: int = 1) -> dict[str, Budget]:
    """Every path measured `runs` times on one seeded store (after one warm-up run each, which also writes
    the store's first state); the smallest self time of each module."""
    out: dict[str, Budget] = {}
    with store() as (env, status):
        for name in PATHS:
            measure(name, env, status)
            best: dict[str, int] = {}
            for _ in range(runs):
                for module, us in measure(name, env, status).items():
                    best[module] = min(us, best.get(module, us))
            out[name] = Budget(python_version(), best)
    return out


def list_path(name: str) -> Path:
    return HERE / f"{name}.txt"


def read_list(name: str) -> Budget:
    python, modules = "", {}
    for line in list_path(name).read_text().splitlines():
        if line.startswith("# python "):
            python = line.split()[2]
        elif line and not line.startswith("#"):
            module, us = line.split()
            modules[module] = int(us)
    return Budget(python, modules)


def write_list(name: str, budget: Budget) -> None:
    total = sum(budget.modules.values())
    lines = [
        f"# The modules `pluginsdk {' '.join(PATHS[name])}` imports at a cold start, with each one's self import",
        f"# time in µs (-X importtime, the smallest of three runs; {len(budget.modules)} modules, {total:,} µs).",
        f"# Regenerate with `{UPDATE}` (tests/README.md).",
        f"# python {budget.python}",
        *(f"{m} {us}" for m, us in sorted(budget.modules.items())),
    ]
    list_path(name).write_text("\n".join(lines) + "\n")


def _stdlib(module: str) -> bool:
    return module.split(".", maxsplit=1)[0] in sys.stdlib_module_names


def differences(name: str, measured: Budget) -> tuple[dict[str, int], list[str]]:
    """What path `name` imports beyond its list (with self µs), and what the list has that it no longer imports.

    Under another Python version than the list's, the standard library's modules are left out of the
    comparison (each version imports its own)."""
    listed = read_list(name)
    now, before = measured.modules, listed.modules
    if listed.python != measured.python:
        now = {m: us for m, us in now.items() if not _stdlib(m)}
        before = {m: us for m, us in before.items() if not _stdlib(m)}
    return {m: us for m, us in now.items() if m not in before}, sorted(set(before) - set(now))


def explain(name: str, new: dict[str, int], gone: list[str]) -> str:
    parts = [f"`pluginsdk {' '.join(PATHS[name])}` imports a different set of modules than {list_path(name).name}:"]
    if new:
        total = sum(new.values())
        parts.append(f"  new ({len(new)}, {total:,} µs self time this run):")
        parts += [f"    + {m} ({us} µs)" for m, us in sorted(new.items(), key=lambda kv: -kv[1])]
    if gone:
        parts.append(f"  no longer imported ({len(gone)}):")
        parts += [f"    - {m}" for m in gone]
    parts.append(
        f"A module on a cold path is paid by every scheduler call: import it lazily where it is used, or, if it must "
        f"load, run `{UPDATE}` and commit tests/import_budget/*.txt with the change (the list records each module's "
        f"measured self cost)."
    )
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    update = "--update" in argv
    measured = measure_all(runs=3 if update else 1)
    status = 0
    for name, budget in measured.items():
        if update:
            write_list(name, budget)
            total = sum(budget.modules.values())
            print(f"{list_path(name).relative_to(ROOT)}: {len(budget.modules)} modules, {total:,} µs")
            continue
        new, gone = differences(name, budget)
        if new or gone:
            print(explain(name, new, gone) + "\n")
            status = 1
    if not update and not status:
        print(json.dumps({n: len(b.modules) for n, b in measured.items()}))
    return status
