"""Request machines from a template, wait for them, print the request, return them.

Runs on the embedded defaults: a SQLite store in your user data directory, the simulated `local`
provider, no server. `--store PATH` uses another SQLite file. Safe to run again.

    python examples/quickstart.py [--store PATH] [--count N]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from pluginsdk import AlreadyExistsError, PluginSDK


async def main(store: str | None, count: int) -> None:
    config = {"storage": {"path": store}} if store else None
    async with PluginSDK(config=config) as sdk:
        print(f"store: {sdk.settings.storage_target}")
        try:
            await sdk.create_template(
                template_id="quickstart",
                name="Quickstart workers",
                image_id="ami-0123456789abcdef0",
                instance_type="t3.medium",
                max_number=10,
                tags={"project": "quickstart"},
            )
            print("template 'quickstart' created")
        except AlreadyExistsError:
            print("template 'quickstart' exists already")

        started = time.monotonic()
        print(f"requesting {count} machines and waiting for them ...")
        req = await sdk.create_request("quickstart", count, wait=True, timeout=120)
        print(f"request {req.id}: {req.status} after {time.monotonic() - started:.1f}s")
        done = await sdk.get_request(req.id, long=True)
        print(done.to_json())

        ids = [m.machine_id for m in done.machines if m.status == "running"]
        ret = await sdk.create_return_request(ids)
        print(f"returning {len(ret.processed_machines)} machines in {ret.request_id} ...")
        while not (back := await sdk.get_request(ret.request_id or "")).status.terminal:
            await asyncio.sleep(0.25)
        print(f"return request {back.request_id}: {back.status} — {back.message}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="SQLite file to use (default: the user data directory)")
    parser.add_argument("--count", type=int, default=3, help="machines to request (default 3)")
    args = parser.parse_args()
    asyncio.run(main(args.store, args.count))
