"""Console page timings: server time per page on a seeded store, and what a first load transfers.

    python bench/console_bench.py            # 10,000 templates, requests and constraints
    python bench/console_bench.py 2000       # 2,000 of each

Seeding: one template and one request are written through the SDK (so the rows are the engine's own), then
copied in bulk SQL to N of each (ids and their mentions in the row rewritten); N constraints (one per
template, for the admin role) go in with one `import_constraints_template` call (all or nothing, one policy
compile). The store is then served on loopback (`tests/support/remote.running_server`); the bench signs in
to /ui/ with an administrator's API key and fetches each page 20 times. It prints per page the median
server time (the `ms` of the console's access-log line, so loopback and the client are not counted), the
median round trip, and the page's size; then a first load of each page with its stylesheet, script and
icon (what a browser with an empty cache transfers), against the targets: 50 ms and 250 KB.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from pluginsdk import PluginSDK
from tests.support.backends import base_config
from tests.support.remote import running_server

PAGES = (
    "/ui/",
    "/ui/templates",
    "/ui/templates/t00042",
    "/ui/template-import",
    "/ui/requests",
    "/ui/requests/req-bench-00042",
    "/ui/machines",
    "/ui/constraints",
    "/ui/roles",
    "/ui/user-roles",
    "/ui/users",
    "/ui/keys",
    "/ui/api-keys",
    "/ui/audit",
    "/ui/playground",
    "/ui/ops",
)
ASSETS = ("/ui/static/console.css", "/ui/static/console.js", "/ui/static/icon.svg")
DOCS_ASSETS = ("/docs/swagger-ui.css", "/docs/swagger-ui-bundle.js", "/docs/swagger-init.js", "/docs/favicon.png")
TARGET_MS, TARGET_BYTES = 50.0, 250 * 1024


def _copy(db: sqlite3.Connection, table: str, key: str, first: str, ids: list[str]) -> None:
    """Copies of the row whose `key` is `first`, one per id, every mention of `first` in it replaced, each
    created a second before the next (a store's rows are not all of one instant)."""
    cursor = db.execute(f"SELECT * FROM {table} WHERE {key} = ?", (first,))  # noqa: S608 -- fixed names
    columns = [c[0] for c in cursor.description]
    (row,) = cursor.fetchall()
    created = columns.index("created_at")
    start = datetime.fromisoformat(row[created]) - timedelta(seconds=len(ids))
    marks = ", ".join("?" for _ in columns)
    copies = []
    for i, new in enumerate(ids):
        if new != first:
            copy = [v.replace(first, new) if isinstance(v, str) else v for v in row]
            copy[created] = (start + timedelta(seconds=i)).isoformat()
            copies.append(tuple(copy))
    db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", copies)  # noqa: S608


async def seed(config: dict[str, Any], n: int) -> str:
    started = time.perf_counter()
    async with PluginSDK(config=config) as sdk:
        key = await sdk.create_api_key(api_key_name="bench", description="bench key", user_id="administrator")
        await sdk.create_template(template_id="t00000", image_id="img", name="template 0", max_number=5)
        request = await sdk.create_request(template_id="t00000", requested_count=1)
        while str((await sdk.get_request(request.request_id)).status) not in ("completed", "partial", "failed"):
            await asyncio.sleep(0.05)
        first_request = request.request_id
    db = sqlite3.connect(str(config["storage"]["path"]))  # type: ignore[index]
    with db:
        _copy(db, "templates", "template_id", "t00000", [f"t{i:05d}" for i in range(n)])
        _copy(db, "requests", "request_id", first_request, [f"req-bench-{i:05d}" for i in range(n)])
    db.close()
    constraint = {
        "constraintId": "c{{N}}",
        "name": "bench constraint",
        "description": "bench constraint",
        "objectType": "template",
        "criteriaAnd": [{"field": "templateId", "operator": "equals", "value": "t{{N}}"}],
        "groupPermissions": [{"groupId": "admin", "permission": "GET", "permissionType": "allow"}],
    }
    constraints = [json.loads(json.dumps(constraint).replace("{{N}}", f"{i:05d}")) for i in range(n)]
    async with PluginSDK(config=config) as sdk:
        await sdk.import_constraints_template(constraints=constraints, name="bench")
    print(f"seeded {n} templates, requests and constraints in {time.perf_counter() - started:.1f} s", flush=True)
    return str(key.api_key)


class _ServerTimes(logging.Handler):
    """The `ms` of each console access-log line: the server's own time for the page."""

    def __init__(self) -> None:
        super().__init__()
        self.ms: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = json.loads(record.getMessage())
        if line.get("console"):
            self.ms.append(float(line["ms"]))


def main(n: int) -> None:
    config = base_config(Path(tempfile.mkdtemp()), app={"authProvider": {"useManaged": {"enabled": True}}})
    key = asyncio.run(seed(config, n))
    times = _ServerTimes()
    access = logging.getLogger("pluginsdk.access")
    access.addHandler(times)
    access.setLevel(logging.INFO)
    worst_ms, worst_bytes = 0.0, 0
    with running_server(config) as url, httpx.Client(base_url=url, timeout=60) as client:
        form = client.get("/ui/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert token
        client.post("/ui/login", data={"csrf": token.group(1), "api_key": key})
        assets = sum(len(client.get(a).content) for a in ASSETS)
        print(f"{'page':30} {'server p50':>11} {'round trip':>11} {'html':>9} {'first load':>11}")
        for path in PAGES:
            trips = []
            times.ms.clear()
            for _ in range(20):
                started = time.perf_counter()
                page = client.get(path)
                trips.append((time.perf_counter() - started) * 1000)
                assert page.status_code == 200, (path, page.status_code)
            server = statistics.median(times.ms[-20:])
            first = len(page.content) + assets
            worst_ms, worst_bytes = max(worst_ms, server), max(worst_bytes, first)
            print(
                f"{path:30} {server:8.1f} ms {statistics.median(trips):8.1f} ms {len(page.content):7d} B "
                f"{first / 1024:8.1f} KB",
                flush=True,
            )
        print(f"assets (css, js, icon): {assets} B")
        docs = sum(len(client.get(p).content) for p in ("/docs", *DOCS_ASSETS))
        print(f"/docs (Swagger UI, not a console page): first load {docs / 1024:.0f} KB uncompressed")
    ms_ratio, kb_ratio = worst_ms / TARGET_MS, worst_bytes / TARGET_BYTES
    print(f"slowest page {worst_ms:.1f} ms = {ms_ratio:.2f} x the 50 ms target")
    print(f"largest first load {worst_bytes / 1024:.1f} KB = {kb_ratio:.2f} x the 250 KB target")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000)
