"""`machines request --wait` on a terminal: submit, then poll and redraw one progress line on stderr.

Off a terminal the request is one SDK call with `wait=True` (nothing on stderr); here the CLI waits through
`pluginsdk.waiting` (the helper the MCP server's progress notifications use too), so a person sees the
machines come up. `--timeout` bounds the wait either way.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import RequestCreated
    from ..sdk import PluginSDK
    from ..waiting import Progress

__all__ = ["request_with_progress"]


async def request_with_progress(sdk: PluginSDK, params: dict[str, Any]) -> RequestCreated:
    """Submit without waiting, then redraw the progress line until the request is terminal or the timeout passes."""
    from ..operations import CreateRequestCommand, get_spec
    from ..waiting import request_and_wait

    err = sys.stderr
    drawn = False

    async def draw(progress: Progress) -> None:
        nonlocal drawn
        drawn = True
        err.write(f"\r{progress.text()}\x1b[K")
        err.flush()

    op = get_spec("create_request").build(params)
    assert isinstance(op, CreateRequestCommand)
    created = await request_and_wait(sdk, op, draw)
    if drawn:
        err.write("\n")
    return created
