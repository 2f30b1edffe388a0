"""Instructions a quota costs a launch, repeatable under load (docs/benchmarks.md "Quota reservation"):

    valgrind --tool=callgrind .venv/bin/python bench/quota_ir.py with-quota 200   # and 0; no-quota 200 and 0

`bench/quota_bench.py`'s configuration (SQLite) and warm-up, then N launches (`create_request` of one machine,
no wait) of one of its two templates; a launch's instructions are (Ir at N − Ir at 0) / N.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from quota_bench import _config  # noqa: E402

from pluginsdk import PluginSDK  # noqa: E402


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("template", choices=["with-quota", "no-quota"])
    parser.add_argument("launches", type=int)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        async with PluginSDK(config=_config({"path": str(Path(tmp) / "store.db")}, tmp)) as sdk:
            await sdk.create_template(
                template_id="with-quota", image_id="ami-1", provider="capped", max_active=1_000_000
            )
            await sdk.create_template(template_id="no-quota", image_id="ami-1", provider="open")
            for _ in range(20):  # warm-up, as quota_bench
                for t in ("with-quota", "no-quota"):
                    await sdk.create_request(t, 1)
            for _ in range(args.launches):
                await sdk.create_request(args.template, 1)


if __name__ == "__main__":
    asyncio.run(main())
