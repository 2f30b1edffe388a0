"""`machines request --wait` on a terminal: submit, then poll and redraw one progress line on stderr.

Off a terminal the request is one SDK call with `wait=True` (nothing on stderr); here the CLI polls,
so a person sees the machines come up. `--timeout` bounds the wait either way.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import RequestCreated
    from ..sdk import PluginSDK

__all__ = ["request_with_progress"]

_POLL = 0.5


def _line(request_id: str, status: str, running: int, total: int, elapsed: float) -> str:
    return f"\r{request_id}: {status}, {running}/{total} machines running ({elapsed:.0f}s)\x1b[K"


async def request_with_progress(sdk: PluginSDK, params: dict[str, Any]) -> RequestCreated:
    """Submit without waiting, then poll the status until it is terminal or the timeout passes."""
    from ..models import RequestCreated
    from ..operations import CreateRequestCommand

    timeout = float(params.get("timeout") or CreateRequestCommand.model_fields["timeout"].default)
    created: RequestCreated = await sdk.call("create_request", **(params | {"wait": False}))
    if created.dry_run or created.status != "submitted":
        return created
    start = time.monotonic()
    err = sys.stderr
    while True:
        status = await sdk.call("get_request_status", request_ids=[created.request_id])
        request = status.requests[0]
        running = sum(1 for m in request.machines if m.status.value == "running")
        elapsed = time.monotonic() - start
        err.write(_line(request.request_id, request.status.value, running, request.count, elapsed))
        err.flush()
        if request.status.terminal or elapsed >= timeout:
            break
        await asyncio.sleep(min(_POLL, max(0.0, timeout - elapsed)))
    err.write("\n")
    done = request.status.terminal
    message = request.message if done else f"Still {request.status.value} after {timeout:.0f}s; not waiting longer."
    return RequestCreated(
        request_id=request.request_id,
        status=request.status.value if done else "submitted",
        machines=request.machines,
        message=message,
    )
