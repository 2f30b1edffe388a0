"""Several servers, one PostgreSQL database, one server SIGKILLed every few seconds.

Two `pluginsdk server start` processes and four CLI loops requesting and returning machines through them
(a CLI call that meets a dead server is retried with the same idempotency id on the other one). Afterwards:
no machine lost (every machine the provider launched is in the store), none returned twice, no request
stuck, every claim released, and no answer was a 500.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk import PluginSDK
from tests.support.postgres import fresh_database

CHAOS_SECONDS = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, config_file: Path, port: int, log: Path) -> None:
        self.config_file, self.port, self.log = config_file, port, log
        self.proc: asyncio.subprocess.Process | None = None
        self.kills = 0

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "pluginsdk", "--config", str(self.config_file),
                "server", "start", "--port", str(self.port),
                stdout=out, stderr=out,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient() as client:
            while True:
                try:
                    if (await client.get(f"http://127.0.0.1:{self.port}/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                assert self.proc.returncode is None, self.log.read_text()[-2000:]
                assert time.monotonic() < deadline, "server did not start"
                await asyncio.sleep(0.1)

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()
        self.kills += 1

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(self.proc.wait(), 30)


async def cli(env: dict[str, str], url: str, *args: str) -> tuple[int, Any, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pluginsdk", "--backend", "remote", "--format", "json", *args,
        env={**env, "PLUGIN_API_URL": url},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    try:
        body = json.loads(out or err or b"null")
    except ValueError:
        body = None
    return proc.returncode or 0, body, (out + err).decode(errors="replace")


@pytest.mark.postgres
@pytest.mark.slow
async def test_two_servers_four_clis_one_server_killed_every_few_seconds(tmp_path: Path) -> None:
    async with fresh_database() as url:
        config = {
            "storage": {"type": "postgresql", "url": url, "seal_key_file": str(tmp_path / "seal.key")},
            "provider": {"type": "local", "local": {"boot_delay": 0.3, "terminate_delay": 0.3, "seed": 3}},
            "sdk": {"reconcile_interval": 0.3, "claim_seconds": 2.0},
            "logging": {"level": "WARNING"},
        }
        config_file = tmp_path / "config.json"
        config_file.write_text(json.dumps(config))
        async with PluginSDK(config=config) as sdk:
            await sdk.create_template(template_id="web", image_id="ami-1")
            key = (
                await sdk.create_api_key(api_key_name="chaos", description="chaos key", user_id="administrator")
            ).api_key
        servers = [Server(config_file, free_port(), tmp_path / f"server{i}.log") for i in range(2)]
        await asyncio.gather(*(s.start() for s in servers))
        urls = [f"http://127.0.0.1:{s.port}" for s in servers]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")}
        env["PLUGIN_API_KEY"] = str(key)
        stop = asyncio.Event()
        seen: dict[str, list[str]] = {}  # provision request id -> machines the CLI was told about
        returns: dict[str, list[str]] = {}
        failures: list[str] = []

        async def call(i: int, *args: str) -> Any:
            """One CLI call, retried (same idempotency id) on the other server while one is down."""
            for attempt in range(40):
                code, body, text = await cli(env, urls[(i + attempt) % 2], *args)
                if code == 0:
                    return body
                # a create whose first attempt died holding the id's claim is 409 until the lease ends: retry
                if not isinstance(body, dict) or body.get("error_code") not in (
                    "CONNECTION_ERROR",
                    "TIMEOUT",
                    "ALREADY_EXISTS",
                ):
                    failures.append(text[-500:])  # anything but "that server is down" (a 500 above all)
                    return None
                await asyncio.sleep(0.2)
            failures.append(f"gave up: {args}")
            return None

        async def worker(i: int) -> None:
            n = 0
            while not stop.is_set():
                rid, ret = f"req-w{i}-{n}", f"ret-w{i}-{n}"
                n += 1
                made = await call(
                    i, "machines", "request", "web", "2", "--request-id", rid, "--wait", "--timeout", "15"
                )
                if not made:
                    continue
                ids = [m["machine_id"] for m in made.get("machines") or []]
                seen[rid] = ids
                if ids:
                    back = await call(i, "machines", "return", *ids, "--force-return", "--request-id", ret)
                    if back:
                        returns[ret] = ids

        async def chaos() -> None:
            k = 0
            while not stop.is_set():
                await asyncio.sleep(2.0)
                victim = servers[k % 2]
                k += 1
                await victim.kill()  # mid-whatever: claims, transactions and provider calls cut off
                await asyncio.sleep(0.5)
                await victim.start()

        workers = [asyncio.create_task(worker(i)) for i in range(4)]
        killer = asyncio.create_task(chaos())
        await asyncio.sleep(CHAOS_SECONDS)
        while sum(s.kills for s in servers) < 2 and not killer.done():  # restarts are slow on a loaded box
            await asyncio.sleep(0.5)
        stop.set()
        await killer
        await asyncio.wait_for(asyncio.gather(*workers), 90)
        assert sum(s.kills for s in servers) >= 2  # a restart takes a few seconds on a loaded machine
        assert len(seen) >= 4, "too little work got through to judge"

        # the surviving servers settle everything; nothing may stay stuck
        async with PluginSDK(config={**config, "sdk": {"reconcile_interval": 3600}}) as sdk:
            db = sdk.backend.engine.store.db  # type: ignore[attr-defined]
            deadline = time.monotonic() + 40
            while await db.fetchall("SELECT request_id FROM requests WHERE status IN ('pending', 'running')"):
                assert time.monotonic() < deadline, "requests stuck: " + str(
                    await db.fetchall("SELECT request_id, status FROM requests WHERE status IN ('pending', 'running')")
                )
                await asyncio.sleep(0.3)
            await asyncio.gather(*(s.stop() for s in servers))
            # no machine lost: everything the provider launched is a machine in the store
            orphans = await db.fetchall(
                "SELECT instance_id FROM local_instances WHERE instance_id NOT IN (SELECT machine_id FROM machines)"
            )
            assert orphans == []
            machines = {r["machine_id"]: r for r in await db.fetchall("SELECT * FROM machines")}
            for rid, ids in seen.items():
                assert set(ids) <= set(machines), f"{rid}: machines the caller was given are gone"
            # none returned twice: return requests never share a machine
            owner: dict[str, str] = {}
            for row in await db.fetchall("SELECT request_id, data FROM requests WHERE request_type = 'return'"):
                for mid in json.loads(row["data"])["machine_ids"]:
                    assert mid not in owner, f"{mid} returned by {owner[mid]} and {row['request_id']}"
                    owner[mid] = row["request_id"]
            for ret, ids in returns.items():
                for mid in ids:
                    assert machines[mid]["return_request_id"] == ret
            terminated = await db.fetchall("SELECT instance_id FROM local_instances WHERE terminate_at IS NOT NULL")
            assert {r["instance_id"] for r in terminated} >= {m for ids in returns.values() for m in ids}
            # every claim released (killed servers' leases have expired, nobody holds one)
            await asyncio.sleep(2.1)
            assert await sdk.backend.engine.store.claims.live() == []  # type: ignore[attr-defined]
        assert failures == []
