"""The calls a read passes from an interface's entry to its handler: REST by API key, and the CLI in-process.

    python bench/hop_count.py

Runs `GET /api/v1/requests/{id}` through the server's ASGI app and `pluginsdk requests show ID` through the
console entry, both in this process, and prints the frames of this project (pluginsdk/, backends/) on the
stack when the handler starts: the hops a request passes on its way to the handler. Run it with PYTHONPATH
pointing at another checkout to count that checkout's hops.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

HANDLER = "get_request"


def _ours(frame: FrameType, root: str) -> str | None:
    path = frame.f_code.co_filename
    if not path.startswith(root):
        return None
    rel = path[len(root) :]
    if not rel.startswith(("pluginsdk" + os.sep, "backends" + os.sep)):
        return None
    return f"{rel}:{frame.f_code.co_qualname}"


def chain_at_handler(run: Callable[[], Any], root: str) -> list[str]:
    """The project's frames, outermost first, on the stack when the handler is called during `run()`."""
    seen: list[list[str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and not seen and code.co_name == HANDLER and f"{os.sep}handlers{os.sep}" in code.co_filename:
            chain = []
            f: FrameType | None = frame
            while f is not None:
                name = _ours(f, root)
                if name:
                    chain.append(name)
                f = f.f_back
            seen.append(chain[::-1])

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen[0] if seen else []


async def _seed(config: dict[str, Any]) -> tuple[str, str]:
    from pluginsdk import PluginSDK

    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        rid = (await sdk.create_request("web", 1, wait=True)).id
        key = await sdk.create_api_key(api_key_name="hops", description="hop count", user_id="administrator")
        return rid, str(key.api_key)


async def _rest_get(config: dict[str, Any], rid: str, key: str) -> int:
    """One GET through the ASGI app (lifespan started first), as uvicorn would call it."""
    from asgi_inproc import Caller, started

    from pluginsdk.config import load_settings
    from pluginsdk.server import create_app

    app = create_app(load_settings(config=config, environ={}))
    read = Caller(app, "GET", f"/api/v1/requests/{rid}", {"authorization": key})
    async with started(app):
        await read.call()
    return read.status


def main() -> None:
    import pluginsdk

    root = str(Path(pluginsdk.__file__).resolve().parents[1]) + os.sep
    tmp = Path(tempfile.mkdtemp())
    config = {"storage": {"path": str(tmp / "hops.db")}, "provider": {"type": "local"}}
    (tmp / "config.json").write_text(json.dumps(config))
    rid, key = asyncio.run(_seed(config))
    status: list[int] = []
    rest = chain_at_handler(lambda: status.append(asyncio.run(_rest_get(config, rid, key))), root)
    assert status == [200], status

    def cli() -> None:
        from pluginsdk._entry import main as entry

        argv = sys.argv
        sys.argv = ["pluginsdk", "--config", str(tmp / "config.json"), "requests", "show", rid]
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
                entry()
        finally:
            sys.argv = argv

    shown = chain_at_handler(cli, root)
    print(f"checkout: {root}")
    for name, chain in (("REST read by API key (GET /api/v1/requests/{id})", rest), ("CLI requests show ID", shown)):
        print(f"\n{name}: {len(chain)} frames to the handler")
        for frame in chain:
            print(f"  {frame}")


if __name__ == "__main__":
    main()
