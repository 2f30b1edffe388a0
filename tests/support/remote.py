"""The remote side of the shared fixture: a real uvicorn server on 127.0.0.1 and the remote backend.

The server runs in a thread with its own event loop, serving an engine on the test's store. Credentials
come the way an operator gets them: an admin API key issued in-process on the same store.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from pluginsdk import PluginSDK
from pluginsdk.config import load_settings


@contextmanager
def running_server(config: dict[str, Any], port: int = 0) -> Iterator[str]:
    """Serve `config`'s engine on a free loopback port, or `port` (the operator routes /livez and /readyz
    included); yields the base URL."""
    from pluginsdk.server import create_app

    with serving(create_app(load_settings(config=config, environ={})), port) as url:
        yield url


@contextmanager
def serving(app: Any, port: int = 0) -> Iterator[str]:
    """`app` on uvicorn in a thread, on a free loopback port or `port`; yields the base URL."""
    import uvicorn

    with in_thread(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")) as bound:
        yield f"http://127.0.0.1:{bound}"


@contextmanager
def in_thread(config: Any) -> Iterator[int]:
    """A uvicorn server of `config` in a thread with its own event loop; yields the port it listens on."""
    from tests.support.quick_stop import QuickStop

    server = QuickStop(config)
    thread = threading.Thread(target=server.run, name="pluginsdk-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    try:
        yield int(server.servers[0].sockets[0].getsockname()[1])
    finally:
        server.stop()
        thread.join(timeout=30)


async def admin_key(config: dict[str, Any], name: str = "test-harness") -> str:
    """An API key acting as the administrator, issued in-process on the same store."""
    async with PluginSDK(config=config) as local:
        created = await local.create_api_key(api_key_name=name, description="test harness key", user_id="administrator")
        return str(created.api_key)


@asynccontextmanager
async def remote_sdk(config: dict[str, Any], tmp_path: Path) -> AsyncIterator[PluginSDK]:
    key = await admin_key(config)
    with running_server(config) as url:
        async with PluginSDK(backend="remote", api_url=url, api_key=key, config=config) as sdk:
            yield sdk
    await asyncio.sleep(0)
