"""`machines request --wait` on a terminal: submit, then poll and redraw one progress line on stderr.

Off a terminal the request is one SDK call with `wait=True` (nothing on stderr); here the CLI waits through
`pluginsdk.waiting` (the helper the MCP server's progress notifications use too), so a person sees the
machines come up. `--timeout` bounds the wait either way.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..operations import OperationSpec
    from ..sdk import PluginSDK
    from ..waiting import Progress

__all__ = ["run_with_progress"]


async def run_with_progress(sdk: PluginSDK, spec: OperationSpec, params: dict[str, Any]) -> Any:
    """Run the operation; one that reports progress (`pluginsdk.waiting.reports_progress`) is submitted
    without waiting, and its line redrawn until the request is terminal or the timeout passes."""
    from ..waiting import reports_progress, request_and_wait

    err = sys.stderr
    drawn = False

    async def draw(progress: Progress) -> None:
        nonlocal drawn
        drawn = True
        err.write(f"\r{progress.text()}\x1b[K")
        err.flush()

    op = spec.build(params)
    if not reports_progress(op):
        return await sdk.execute(op)
    created = await request_and_wait(sdk, op, draw)
    if drawn:
        err.write("\n")
    return created
