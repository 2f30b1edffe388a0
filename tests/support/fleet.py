"""A fleet: several real server processes on one store, the way docs/deployment.md runs them.

`fleet(kind, config, tmp_path)` starts, as separate processes (`python -m pluginsdk server start`):

- `postgresql`: three servers on one PostgreSQL database behind HAProxy round-robin (`haproxy -f` in the
  foreground, a child of the test, on a free loopback port; its configuration is `haproxy_config`, the one
  docs/deployment.md shows);
- `sqlite-workers`: one server with `--workers 2` on one SQLite file (the kernel spreads connections over
  the workers; its URL is the fleet's URL).

A `Fleet` knows its URL (the balancer's, or the one server's), each server (`servers[i].url`, to aim a call at
one), an administrator's API key, `keys_for(users)`: a key of each user, with the admin role, and
`rolling_restart()`, as a deploy does it: each server taken out of HAProxy and drained first (HAProxy's
runtime API, the `stats socket` of `haproxy_config`), then stopped with SIGTERM, started again on its port
and put back, the next only once HAProxy routes to it again. `rolling()` runs one in the background for a
block and never lets it outlive the block; the fleet cancels what is still restarting before it stops its
servers (and before its database is dropped). The configuration is the caller's: the store is set here.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk import PluginSDK
from tests.support.postgres import fresh_database

KINDS = ("postgresql", "sqlite-workers")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def haproxy_config(port: int, admin_socket: Path, servers: list[int]) -> str:
    """HAProxy in front of the servers: round-robin, one server connection per request (none kept idle, so
    none is reused as the server closes it), health-checked on /readyz, a request whose server went away (a
    crash) retried on another; its runtime API on `admin_socket` takes a server out before a restart stops it
    and puts it back after (a rolling restart loses no call)."""
    lines = [
        "global",
        "    maxconn 512",
        f"    stats socket {admin_socket} mode 600 level admin",
        "defaults",
        "    mode http",
        "    timeout connect 2s",
        "    timeout client 60s",
        "    timeout server 60s",
        "    timeout tunnel 1h",  # a console's event stream stays open
        "    option redispatch 1",  # each retry goes to another server
        "    retries 3",
        "    retry-on conn-failure empty-response",
        "frontend fleet",
        f"    bind 127.0.0.1:{port}",
        # the servers trust X-Forwarded-For from a proxy on their host: it must be the caller's address, never
        # what the caller sent (per-address limits count it)
        "    http-request set-header X-Forwarded-For %[src]",
        "    default_backend servers",
        "backend servers",
        "    balance roundrobin",
        # a new connection to the server for each request, closed after its response: HAProxy 2.6 keeps an idle
        # server connection without any timeout of its own (nothing like nginx's upstream keepalive_timeout) and
        # may reuse it in the instant the server closes it (`api.keep_alive_timeout`); that request, if not its
        # client's first, gets no answer (HAProxy closes the client's connection; `retry-on` does not save it)
        "    option http-server-close",
        "    option httpchk GET /readyz",
        "    http-check expect status 200",
        # a check every 300 ms, one failure takes a server out (a restart is noticed at once); each check may
        # take 2 s (without `timeout check` HAProxy allows `inter`, 300 ms, which a loaded box's /readyz exceeds)
        "    timeout check 2s",
        "    default-server inter 300ms fall 1 rise 1",
        *(f"    server s{i} 127.0.0.1:{p} check" for i, p in enumerate(servers)),
    ]
    return "\n".join(lines) + "\n"


@dataclass
class Server:
    """One server process of the fleet."""

    port: int
    args: tuple[str, ...]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Fleet:
    kind: str
    config: dict[str, Any]
    url: str
    key: str
    servers: list[Server]
    config_file: Path
    admin_socket: Path | None = None
    _keys: dict[str, str] = field(default_factory=dict)
    _restarts: set[asyncio.Task[None]] = field(default_factory=set)

    async def keys_for(self, user_ids: list[str]) -> list[str]:
        """An API key of each user, a user with the admin role (each user has their own quotas)."""
        missing = [u for u in user_ids if u not in self._keys]
        if missing:
            async with PluginSDK(config=self.config) as sdk:
                for user_id in missing:
                    await sdk.create_user_roles(user_id=user_id, role_name=["admin"])
                    made = await sdk.create_api_key(api_key_name="fleet", description="fleet test", user_id=user_id)
                    self._keys[user_id] = str(made.api_key)
        return [self._keys[u] for u in user_ids]

    async def answered(self) -> dict[str, int]:
        """Responses each server has given through HAProxy so far (its statistics; health checks not
        counted): which server answered a call is the difference of two readings."""
        if self.admin_socket is None:
            return {}
        codes = ("hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx", "hrsp_other")
        rows = await _servers_stat(self.admin_socket)
        return {name: sum(int(row[c] or 0) for c in codes) for name, row in rows.items()}

    async def restart(self, index: int) -> None:
        """Restart server `index` as a deploy does: out of HAProxy and drained (`_drain`), stopped (SIGTERM:
        it finishes what it still serves), started again on its port, back in HAProxy once it is ready. The
        task restarting is known to the fleet meanwhile: the fleet cancels it before it stops its servers."""
        task = asyncio.current_task()
        assert task is not None
        self._restarts.add(task)
        try:
            await self._restart(index)
        finally:
            self._restarts.discard(task)

    async def _restart(self, index: int) -> None:
        server, name = self.servers[index], f"s{index}"
        if self.admin_socket is None:
            await _stop(server)
            await _start(server, self.config_file)
            return
        try:
            await _drain(self.admin_socket, name)
            await _stop(server)
            await _start(server, self.config_file)
        finally:  # back in rotation, also when cancelled with its process running (its health check decides)
            if server.proc is not None and server.proc.poll() is None:
                await _set_state(self.admin_socket, name, "ready")
        await _routed(self.admin_socket, name)

    async def rolling_restart(self) -> None:
        """Restart every server in turn, as a deploy does."""
        for index in range(len(self.servers)):
            await self.restart(index)

    @asynccontextmanager
    async def rolling(self) -> AsyncIterator[asyncio.Task[None]]:
        """`rolling_restart()` in the background while the block makes its calls (the block watches the task
        to know when it is done), awaited when the block ends; cancelled and awaited if the block fails, so it
        never goes on restarting servers past its test."""
        task = asyncio.create_task(self.rolling_restart())
        try:
            yield task
            await task
        finally:
            await _cancelled(task)

    async def _cancel_restarts(self) -> None:
        """Cancel (and await) the tasks still restarting a server (one a test left behind), before the servers
        stop for good: otherwise such a task starts a server again after the stop."""
        for task in list(self._restarts):
            await _cancelled(task)


async def _cancelled(task: asyncio.Task[None]) -> None:
    """`task` cancelled if still running, and awaited either way (its own failure is the block's to report)."""
    task.cancel()
    with suppress(asyncio.CancelledError, Exception):
        await task


@asynccontextmanager
async def fleet(kind: str, config: dict[str, Any], tmp_path: Path) -> AsyncIterator[Fleet]:
    """The fleet `kind` (KINDS) serving `config` with the store set here; its servers stopped before the
    store goes (the PostgreSQL database is dropped after the block)."""
    if kind == "postgresql":
        async with fresh_database() as url:
            config = {**config, "storage": {"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal")}}
            async with _running(kind, config, tmp_path, servers=3, args=()) as f:
                yield f
    else:
        config = {**config, "storage": {"path": str(tmp_path / "store.db")}}
        async with _running(kind, config, tmp_path, servers=1, args=("--workers", "2")) as f:
            yield f


@asynccontextmanager
async def _running(
    kind: str, config: dict[str, Any], tmp_path: Path, *, servers: int, args: tuple[str, ...]
) -> AsyncIterator[Fleet]:
    async with PluginSDK(config=config) as sdk:  # the store made (migrated) once, before the servers race to
        key = str(
            (await sdk.create_api_key(api_key_name="fleet", description="fleet admin", user_id="administrator")).api_key
        )
    procs = [Server(free_port(), args, tmp_path / f"server-{i}.log") for i in range(servers)]
    port = free_port() if servers > 1 else procs[0].port
    url = f"http://127.0.0.1:{port}"
    # the URL clients use is the OAuth issuer and the tokens' audience on every server (docs/deployment.md)
    config = {**config, "mcp": {"public_url": url, **config.get("mcp", {})}}
    config_file = tmp_path / "fleet.json"
    config_file.write_text(json.dumps(config))
    balancer: subprocess.Popen[bytes] | None = None
    running: Fleet | None = None
    try:
        await asyncio.gather(*(_start(s, config_file) for s in procs))
        admin_socket = None
        if servers > 1:
            haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
            if not Path(haproxy).exists():
                pytest.skip("HAProxy is not installed (Debian package haproxy; .ci/run installs it)")
            admin_socket = tmp_path / "haproxy.sock"
            cfg = tmp_path / "haproxy.cfg"
            cfg.write_text(haproxy_config(port, admin_socket, [s.port for s in procs]))
            log = (tmp_path / "haproxy.log").open("wb")
            balancer = subprocess.Popen([haproxy, "-f", str(cfg), "-db"], stdout=log, stderr=log)
            for i in range(servers):
                await _routed(admin_socket, f"s{i}")
        running = Fleet(kind, config, url, key, procs, config_file, admin_socket)
        yield running
    finally:
        if running is not None:  # a restart still running would start a server again after the stop below
            await running._cancel_restarts()
        if balancer is not None:
            balancer.terminate()
            await asyncio.to_thread(balancer.wait, 10)
        stopped = await asyncio.gather(*(_stop(s) for s in procs), return_exceptions=True)
        for outcome in stopped:  # every server stopped (or killed) before one's failure is reported
            if isinstance(outcome, BaseException):
                raise outcome


async def _start(server: Server, config_file: Path) -> None:
    """`pluginsdk server start` on the server's port, waited for until /readyz answers 200."""
    with server.log.open("ab") as out:
        server.proc = subprocess.Popen(
            [sys.executable, "-m", "pluginsdk", "--config", str(config_file),
             "server", "start", "--port", str(server.port), *server.args],
            stdout=out, stderr=out, start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient() as client:
        while True:
            try:
                if (await client.get(f"{server.url}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if server.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server on {server.port} did not start: {server.log.read_text()[-3000:]}")
            await asyncio.sleep(0.05)


async def _stop(server: Server) -> None:
    """SIGTERM, waited for (killed past 40 s: the server's own graceful stop gives what it serves 30 s)."""
    proc = server.proc
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.to_thread(proc.wait, 40)
    except subprocess.TimeoutExpired:
        proc.kill()
        await asyncio.to_thread(proc.wait, 10)
        raise


async def _haproxy(admin_socket: Path, command: str) -> str:
    """One command to HAProxy's runtime API; its answer (HAProxy closes the connection after it)."""
    reader, writer = await asyncio.open_unix_connection(str(admin_socket))
    try:
        writer.write(f"{command}\n".encode())
        await writer.drain()
        return (await reader.read()).decode()
    finally:
        writer.close()
        await writer.wait_closed()


async def _servers_stat(admin_socket: Path) -> dict[str, dict[str, str]]:
    """`show stat` of the fleet's servers (backend `servers`), by server name."""
    text = (await _haproxy(admin_socket, "show stat")).lstrip("# ")
    rows = csv.DictReader(io.StringIO(text))
    return {r["svname"]: r for r in rows if r["pxname"] == "servers" and r["svname"] != "BACKEND"}


async def _set_state(admin_socket: Path, name: str, state: str) -> None:
    """`set server servers/<name> state <state>` (`ready`, `drain` or `maint`); HAProxy answers nothing when
    it is done."""
    answer = (await _haproxy(admin_socket, f"set server servers/{name} state {state}")).strip()
    if answer:
        raise RuntimeError(f"HAProxy refused to set {name} {state}: {answer}")


async def _drain(admin_socket: Path, name: str, timeout: float = 15) -> None:
    """Take server `name` out of HAProxy before it stops: no new request (`drain`), the requests it serves
    answered (no current session; up to `timeout`, as a console's progress stream may stay open: the server's
    SIGTERM ends it, and the browser opens another elsewhere), then no traffic and no health check at all
    (`maint`). HAProxy then sends it nothing, so no request meets a connection the stopping server closes."""
    await _set_state(admin_socket, name, "drain")
    deadline = time.monotonic() + timeout
    while int((await _servers_stat(admin_socket))[name]["scur"] or 0) > 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await _set_state(admin_socket, name, "maint")


async def _routed(admin_socket: Path, name: str) -> None:
    """Wait until HAProxy's health check has found server `name` up (`show stat`)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            if (await _servers_stat(admin_socket)).get(name, {}).get("status") == "UP":
                return
        except OSError:  # HAProxy starting: its socket not there yet
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"HAProxy never routed to {name}")
        await asyncio.sleep(0.05)
