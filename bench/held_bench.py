"""A console-session and an OAuth access-token check from the store, warm, in-process: every
request of a fleet pays it, so it must stay small (p50 <= 50 µs) while revocation stays next-call.

    python bench/held_bench.py               # 20,000 checks each, SQLite file
    python bench/held_bench.py --postgres    # and on PostgreSQL (127.0.0.1:5432, a fresh database)

Two local backends open one store (two servers, in one process). Server A's console sessions and /mcp grants
make a session and an access token; server A then checks them N times: `Sessions.get` (the store read, the
idle check, the sealed credential opened under the cookie, the process's `Session` object reused) and
`Grants.verify` (the store read, the credential unsealed under the token). Re-authenticating the credential
through the backend is the same for any session kind and is not counted. Then server B signs the session out
and ends the token's family, and server A's very next check must refuse both: revocation is next-call.
Prints p50 and p99 in µs per check.
"""

from __future__ import annotations

import asyncio
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from backends.local import LocalBackend
from pluginsdk.config import load_settings
from pluginsdk.server.console.sessions import Session, Sessions
from tests.support.backends import base_config


async def _grants(backend: LocalBackend) -> Any:
    from pluginsdk.server.remote_mcp.grants import Grants

    async def renew(_: str) -> Any:
        raise RuntimeError("not renewed in the bench")

    return Grants("http://127.0.0.1:8000", 900, renew, backend.held)


async def run(config: dict[str, Any], n: int) -> dict[str, float]:
    from mcp.shared.auth import OAuthClientInformationFull

    from pluginsdk.server.remote_mcp.grants import SignedIn

    settings = load_settings(config=config, environ={})
    a, b = LocalBackend(settings), LocalBackend(settings)
    await a.start()
    await b.start()
    try:
        sessions_a, sessions_b = Sessions(a), Sessions(b)
        cookie = await sessions_a.open(Session("Bearer psdk_bench", "administrator", "api-key"), None, "127.0.0.1")
        grants_a = await _grants(a)
        client = OAuthClientInformationFull(client_id="bench", redirect_uris=["http://127.0.0.1:9/cb"])
        await grants_a.register_client(client, "127.0.0.1")
        from mcp.server.auth.provider import AuthorizationParams

        params = AuthorizationParams(
            state="s",
            scopes=[],
            code_challenge="c" * 43,
            redirect_uri="http://127.0.0.1:9/cb",
            redirect_uri_provided_explicitly=True,
            resource=None,
        )
        url = await grants_a.authorize(client, params)
        ident = url.split("request=")[1]
        signed_in = SignedIn("Bearer psdk_bench", "administrator", time.time() + 3600)
        issued = await grants_a.issue_code(ident, signed_in)
        assert issued is not None
        code = await grants_a.load_authorization_code(client, issued[1])
        token = (await grants_a.exchange_authorization_code(client, code)).access_token

        figures: dict[str, float] = {}
        for name, check in (
            ("console session", lambda: sessions_a.get(cookie)),
            ("OAuth access token", lambda: grants_a.verify(token)),
        ):
            for _ in range(200):  # warm
                assert await check() is not None
            samples = []
            for _ in range(n):
                started = time.perf_counter_ns()
                await check()
                samples.append(time.perf_counter_ns() - started)
            samples.sort()
            figures[f"{name} p50"] = statistics.median(samples) / 1000
            figures[f"{name} p99"] = samples[int(len(samples) * 0.99)] / 1000

        await sessions_b.end(cookie)  # signed out on server B ...
        assert await sessions_a.get(cookie) is None  # ... refused by server A at its next check
        row = await b.held().grant(hashlib.sha256(token.encode()).hexdigest(), "access")
        assert row is not None
        await b.held().end_family(str(row["family"]))
        assert await grants_a.verify(token) is None
        return figures
    finally:
        await a.aclose()
        await b.aclose()


async def main() -> None:
    n = 20_000
    with tempfile.TemporaryDirectory() as tmp:
        stores = [("SQLite file", base_config(Path(tmp)))]
        results = [(label, await run(config, n)) for label, config in stores]
        if "--postgres" in sys.argv:
            from tests.support.postgres import fresh_database

            async with fresh_database() as url:
                config = base_config(
                    Path(tmp), storage={"type": "postgresql", "url": url, "seal_key_file": f"{tmp}/seal.key"}
                )
                results.append(("PostgreSQL", await run(config, n)))
    print(f"{n:,} checks each, warm, in-process; revocation by the other server refused at the next check")
    print("| store | check | p50 µs | p99 µs |\n|---|---|---:|---:|")
    for label, figures in results:
        for name in ("console session", "OAuth access token"):
            print(f"| {label} | {name} | {figures[f'{name} p50']:.1f} | {figures[f'{name} p99']:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
