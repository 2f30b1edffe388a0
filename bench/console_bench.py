"""Console page timings: server time per page on a seeded store, and what a first load transfers.

    python bench/console_bench.py 10000 1000   # 10,000 templates, 1,000 constraints (default: 10,000 of each)

Seeding many constraints takes long (each write recompiles the policy: 1,000 take ~35 s, 10,000 about an
hour here), hence the second count.

Seeds the store in-process (templates, and template constraints of the admin role), serves it on loopback
(`tests/support/remote.running_server`), signs in to /ui/ with an administrator's API key, then fetches each
page 20 times and prints the median round trip (the server's time plus loopback) and the page's HTML size,
then the stylesheet's and the script's.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from pluginsdk import PluginSDK
from tests.support.backends import base_config
from tests.support.remote import running_server

PAGES = ("/ui/", "/ui/templates", "/ui/requests", "/ui/machines", "/ui/constraints", "/ui/keys", "/ui/audit", "/ui/ops")


async def seed(config: dict[str, object], n: int, m: int) -> str:
    async with PluginSDK(config=config) as sdk:
        key = await sdk.create_api_key(api_key_name="bench", description="bench key", user_id="administrator")
        started = time.perf_counter()
        gate = asyncio.Semaphore(32)

        async def template(i: int) -> None:
            async with gate:
                await sdk.create_template(template_id=f"t{i:05d}", image_id="img", name=f"template {i}", max_number=5)

        async def constraint(i: int) -> None:
            async with gate:
                await sdk.create_constraint(
                    f"c{i:05d}",
                    name=f"c{i}",
                    description="bench constraint",
                    object_type="template",
                    criteria_and=[{"field": "templateId", "operator": "equals", "value": f"t{i:05d}"}],
                    group_permissions=[{"groupId": "admin", "permission": "GET", "permissionType": "allow"}],
                )

        await asyncio.gather(*(template(i) for i in range(n)))
        await asyncio.gather(*(constraint(i) for i in range(m)))
        print(f"seeded {n} templates and {m} constraints in {time.perf_counter() - started:.1f} s", flush=True)
        return str(key.api_key)


def main(n: int, m: int) -> None:
    config = base_config(Path(tempfile.mkdtemp()))
    key = asyncio.run(seed(config, n, m))
    with running_server(config) as url, httpx.Client(base_url=url, timeout=60) as client:
        form = client.get("/ui/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert token
        client.post("/ui/login", data={"csrf": token.group(1), "api_key": key})
        for path in PAGES:
            times = []
            for _ in range(20):
                started = time.perf_counter()
                page = client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                assert page.status_code == 200, (path, page.status_code)
            print(f"{path:18} p50 {statistics.median(times):6.1f} ms  html {len(page.content):6d} B", flush=True)
        css, js = (len(client.get(f"/ui/static/{name}").content) for name in ("console.css", "console.js"))
        print(f"console.css {css} B, console.js {js} B")


if __name__ == "__main__":
    counts = [int(a) for a in sys.argv[1:3]]
    main(counts[0] if counts else 10000, counts[1] if len(counts) > 1 else (counts[0] if counts else 10000))
