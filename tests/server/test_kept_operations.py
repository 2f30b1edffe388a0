"""A query the REST door builds from its path alone is built once per path (`_Plan.operation`): each request
still gets an operation of its own, a refused path is never kept, and a query string builds afresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from pluginsdk import PluginSDK
from pluginsdk.backend import load_backend
from pluginsdk.config import load_settings
from pluginsdk.server import create_app
from tests.support.backends import base_config
from tests.support.remote import admin_key


class _ChangesItsOperation:
    """The local backend, but the first read it serves changes the operation it was given (as a handler may)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self.received: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def execute(self, op: Any, *args: Any, **kwargs: Any) -> Any:
        self.received.append(op)
        if len(self.received) == 1:
            op.long = False
        return await self._backend.execute(op, *args, **kwargs)


async def test_each_read_gets_its_own_operation_and_refusals_are_not_kept(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    key = await admin_key(config)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        rid = str((await sdk.create_request("web", 2, wait=True)).id)
    backend = load_backend("local", load_settings(config=config, environ={}))
    await backend.start()
    served = _ChangesItsOperation(backend)
    try:
        transport = httpx.ASGITransport(app=create_app(served))
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers={"Authorization": key}) as c:
            path = f"/api/v1/requests/{rid}"
            first = await c.get(path)
            assert first.status_code == 200 and first.json()["machines"] == []  # the changed operation's answer
            again = await c.get(path)
            assert again.status_code == 200 and len(again.json()["machines"]) == 2  # its own operation, unchanged
            assert served.received[0] is not served.received[1] and served.received[1].long is True
            short = await c.get(path, params={"long": "false"})
            assert short.status_code == 200 and short.json()["machines"] == []
            for _ in range(2):
                refused = await c.get("/api/v1/requests/" + "x" * 300)
                assert refused.status_code in (400, 404) and "error_code" in refused.json()
            assert (await c.get(path)).json() == again.json()
    finally:
        await backend.aclose()
