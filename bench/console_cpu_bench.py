"""CPU per console page, in-process over ASGI (no sockets): `GET /ui/templates` for a signed-in session.

    python bench/console_cpu_bench.py [N]      # N pages timed (default 400), after 50 to warm up

Run it against two checkouts (`PYTHONPATH=<checkout> python bench/console_cpu_bench.py`), alternating, to
compare what a console request costs in each: issue 33 compared store-held sessions with the in-memory ones
before them (docs/benchmarks.md). The figure is the process's CPU time per page, the client's included.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from pluginsdk import PluginSDK
from pluginsdk.config import load_settings
from pluginsdk.server import create_app


async def main(n: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    config: dict[str, Any] = {"storage": {"path": str(tmp / "store.db")}, "provider": {"type": "local"}}
    async with PluginSDK(config=config) as sdk:
        created = await sdk.create_api_key(api_key_name="bench", description="bench key", user_id="administrator")
        for i in range(20):
            await sdk.create_template(template_id=f"t{i}", image_id="ami-1")
    app = create_app(load_settings(config=config, environ={}))
    await app.backend.start()
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
        page = await http.get("/ui/login")
        token = re.search(r'name="csrf" value="([^"]*)"', page.text)
        assert token is not None
        signed = await http.post("/ui/login", data={"csrf": token[1], "api_key": str(created.api_key)})
        assert signed.status_code == 303, signed.text
        for _ in range(50):
            assert (await http.get("/ui/templates")).status_code == 200
        started = time.process_time()
        for _ in range(n):
            await http.get("/ui/templates")
        print(f"{(time.process_time() - started) / n * 1e6:.0f} µs CPU per page")
    await app.backend.aclose()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 400))
