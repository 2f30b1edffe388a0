"""`machines request --wait`: submit, then poll until the request is terminal or `--timeout` passes.

The CLI always waits through `pluginsdk.waiting` (the helper the MCP server's progress notifications use
too), on either backend: the submission returns at once, so the request exists (and Ctrl-C can name it)
while the CLI waits. On a terminal one progress line is redrawn on stderr so a person sees the machines
come up; off a terminal (pipes, schedulers) nothing is written to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..operations import OperationSpec
    from ..sdk import PluginSDK
    from ..waiting import Progress

__all__ = ["run_with_progress"]


async def run_with_progress(
    sdk: PluginSDK, spec: OperationSpec, params: dict[str, Any], seen: Callable[[Progress], None] | None = None
) -> Any:
    """Run the operation; one that reports progress (`pluginsdk.waiting.reports_progress`) is submitted
    without waiting, and each reading goes to `seen` (and, on a terminal, the progress line) until the
    request is terminal or the timeout passes."""
    from ..waiting import reports_progress, request_and_wait

    err = sys.stderr
    tty = err.isatty()
    drawn = False

    async def draw(progress: Progress) -> None:
        nonlocal drawn
        if seen is not None:
            seen(progress)
        if tty:
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
