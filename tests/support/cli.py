"""The command line for tests: one environment, the CLI run in this process, and the installed script run as one.

- `cli_environment(tmp_path)`: what a user's shell gives `pluginsdk` — a SQLite store and a configuration
  file of its own under `tmp_path`, a data directory there too, and nothing inherited from `PLUGIN_*`
  (`clean_environment()`: only the last, for a command given `--config`).
- `invoke(env, *args)`: the console entry's `main` (`pluginsdk.cli.main`: click without its standalone
  handling, the exit-code mapping, the usage-error envelopes) called in this process, inside click's
  `CliRunner.isolation` (stdin, stdout, stderr and `os.environ` swapped for the call). Logging, the keyring
  backend and context variables start as they would in a new process. Most CLI tests use this: no
  interpreter start per command.
- `run(env, *args)`: the installed `pluginsdk` script as a process, for tests about the process itself —
  signals, a terminal, the entry point, imports at a cold start, `PYTHONPATH`, a server left running.

Both return a `Result` (exit code, stdout, stderr); `ok(env, *args)` checks exit 0 and parses the output.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FAST", "PLUGINSDK", "ROOT", "Result", "clean_environment", "cli_environment", "invoke", "ok", "run"]

ROOT = Path(__file__).resolve().parents[2]
PLUGINSDK = str(Path(sys.executable).with_name("pluginsdk"))
"""The installed console script."""
FAST = "provider:\n  local:\n    boot_delay: 0.05\n    terminate_delay: 0.05\n    seed: 1\n"
"""A `local` provider whose machines start and stop in 50 ms."""


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without any `PLUGIN_*` variable, this repository's code first on the path of a
    child process, plus `extra`: for a command given `--config`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")}
    return {**base, "PYTHONPATH": str(ROOT), **extra}


def cli_environment(tmp_path: Path, config: str = FAST, **extra: str) -> dict[str, str]:
    """The environment of one CLI user: `config` written to `tmp_path/plugin.yaml`, the store `tmp_path/cli.db`.

    `extra`: more variables (they win over the ones set here).
    """
    cfg = tmp_path / "plugin.yaml"
    cfg.write_text(config)
    return {
        **clean_environment(),
        "PLUGIN_STORAGE_PATH": str(tmp_path / "cli.db"),
        "PLUGIN_CONFIG": str(cfg),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        **extra,
    }


@dataclass(frozen=True)
class Result:
    """What one CLI call left: its exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def invoke(env: dict[str, str], *args: str, stdin: str | None = None, fmt: str | None = "json") -> Result:
    """`pluginsdk [--format FMT] ARGS` in this process, with `env` as the whole environment and `stdin` piped in.

    From a coroutine (an async test), the call runs on a worker thread: the CLI starts its own event loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _invoke(env, args, stdin, fmt)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_invoke, env, args, stdin, fmt).result()


def _invoke(env: dict[str, str], args: tuple[str, ...], stdin: str | None, fmt: str | None) -> Result:
    from click.testing import CliRunner

    argv = ["pluginsdk", *(("--format", fmt) if fmt else ()), *args]
    overrides: dict[str, str | None] = {**dict.fromkeys(os.environ), **env}
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    with CliRunner().isolation(input=stdin, env=overrides) as (out, err, _):
        saved_argv, sys.argv = sys.argv, argv
        root.handlers[:] = []  # a new process: warnings reach stderr through logging's last resort
        root.setLevel(logging.WARNING)
        _reset_keyring()
        try:
            code = contextvars.copy_context().run(_main)
        finally:
            sys.argv = saved_argv
            root.handlers[:] = handlers
            root.setLevel(level)
        result = Result(code, out.getvalue().decode(), err.getvalue().decode())
    _reset_keyring()
    assert "Traceback" not in result.err, result.err
    return result


def _main() -> int:
    """The entry's `main`, its `sys.exit` turned into the exit code the process would have."""
    from pluginsdk.cli import main

    try:
        main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    return 0


def _reset_keyring() -> None:
    """Let the keyring pick its backend from the environment again (`PYTHON_KEYRING_BACKEND`), as a new process does."""
    core = sys.modules.get("keyring.core")
    if core is not None:
        core.init_backend()


def run(env: dict[str, str], *args: str, stdin: str | None = None, fmt: str | None = "json") -> Result:
    """The installed `pluginsdk [--format FMT] ARGS` as a process."""
    argv = [PLUGINSDK, *(("--format", fmt) if fmt else ()), *args]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=90, check=False, input=stdin)
    assert "Traceback" not in res.stderr, res.stderr
    return Result(res.returncode, res.stdout, res.stderr)


def ok(env: dict[str, str], *args: str, **kw: Any) -> Any:
    """`invoke`, which must exit 0: the parsed JSON (the text for another `fmt`)."""
    res = invoke(env, *args, **kw)
    assert res.code == 0, res.out + res.err
    return res.json() if kw.get("fmt", "json") == "json" else res.out
