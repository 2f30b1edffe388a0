"""Waiting for a provisioning request: the one wait loop of the engine, the CLI, the MCP server and the remote backend.

`follow` reads a request again and again until it is terminal or a timeout passes: the first pause is short
(a request the provider fulfils at once is answered at once), each next one half as long again, up to `poll`.
How a reading is taken is the caller's: the engine's `create_request(wait=True)` reconciles the request with
its provider (backends/local/handlers/provisioning.py), everything else asks `get_request_status`.

`request_and_wait` submits a `create_request` without waiting, then follows the request's status until the
request is terminal or its `timeout` passes, and hands each reading to an async `report` callback. The CLI
redraws its progress line on stderr from every reading (`pluginsdk/cli/_progress.py`); the MCP server
(`pluginsdk/mcp/tools.py` waits) sends `notifications/progress` through `when_rising`, which passes a reading
on only when more machines run than before (`pluginsdk/mcp/server.py`). The remote backend waits the same way
for a plain `create_request(..., wait=True)` (`backends/remote/__init__.py`), so a wait never has to fit in
one HTTP call.

Nothing here writes anywhere: what a reading becomes is the caller's business.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeGuard, TypeVar

if TYPE_CHECKING:
    from .models import Request, RequestCreated
    from .operations import CreateRequestCommand, Operation


R = TypeVar("R")


class Executor(Protocol):
    """What runs the operations of a wait: a PluginSDK, or the remote backend for one principal."""

    async def execute(self, operation: Operation[R], /) -> R: ...


__all__ = [
    "FIRST_POLL",
    "POLL",
    "Executor",
    "Progress",
    "Report",
    "follow",
    "pauses",
    "reports_progress",
    "request_and_wait",
    "when_rising",
]

POLL = 0.5
"""Longest pause, in seconds, between two status reads of a client's wait (CLI, MCP, remote backend)."""
FIRST_POLL = 0.05
"""First pause, in seconds, of every wait; each next pause is 1.5 times longer, up to the wait's `poll`."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One reading of a request being waited for."""

    request_id: str
    status: str
    """The request's status (`pending`, `running`, `completed`, ...)."""
    running: int
    """Machines of the request running now."""
    total: int
    """Machines requested."""
    elapsed: float
    """Seconds since the request was submitted."""
    finished: bool
    """The request is terminal: no further reading follows."""

    def text(self) -> str:
        """`req-...: running, 1/3 machines running (4s)`."""
        return f"{self.request_id}: {self.status}, {self.running}/{self.total} machines running ({self.elapsed:.0f}s)"

    @classmethod
    def of(cls, request: Request, elapsed: float) -> Progress:
        """The reading `request` gives, `elapsed` seconds into the wait."""
        running = sum(1 for m in request.machines if m.status.value == "running")
        return cls(request.request_id, request.status.value, running, request.count, elapsed, request.status.terminal)


Report = Callable[[Progress], Awaitable[None]]
"""Receives every reading, in order."""


def reports_progress(op: Operation) -> TypeGuard[CreateRequestCommand]:
    """Whether `op` is waited for here, reading by reading: a `create_request` with `wait` (CLI and MCP ask)."""
    from .operations import CreateRequestCommand

    return isinstance(op, CreateRequestCommand) and op.wait


async def request_and_wait(
    sdk: Executor, op: CreateRequestCommand, report: Report, *, poll: float = POLL
) -> RequestCreated:
    """Submit `op` without waiting, then poll and report its status until it is terminal or `op.timeout` passes.

    A dry run, or a request the submission already answered as finished, is returned as the submission
    answered it, with no reading reported. Otherwise the answer is the last reading's request: its status
    and message when it finished, else status `submitted` and a message saying the wait gave up.
    """
    from .models import RequestCreated
    from .operations import get_spec

    status_of = get_spec("get_request_status")

    async def read(request_id: str) -> Request:
        found = await sdk.execute(status_of.build({"request_ids": [request_id]}))
        request: Request = found.requests[0]
        return request

    timeout = float(op.timeout)
    created: RequestCreated = await sdk.execute(op.model_copy(update={"wait": False}))
    if created.dry_run or created.status != "submitted":
        return created
    start = time.monotonic()
    request = await read(str(created.request_id))  # a submitted request has its id
    request = await follow(
        lambda r: read(r.request_id), request, seconds=timeout, report=report, poll=poll, start=start
    )
    done = request.status.terminal
    message = request.message if done else f"Still {request.status.value} after {timeout:.0f}s; not waiting longer."
    return RequestCreated(
        request_id=request.request_id,
        status=request.status.value if done else "submitted",
        machines=request.machines,
        message=message,
    )


async def follow(
    read: Callable[[Request], Awaitable[Request]],
    request: Request,
    *,
    seconds: float,
    report: Report | None = None,
    poll: float = POLL,
    start: float | None = None,
    wait: Callable[[float], Awaitable[None]] | None = None,
) -> Request:
    """`request` read again with `read` until it is terminal or `seconds` have passed since `start`
    (`time.monotonic()`; default: now); each reading, the first one (`request`) too, goes to `report`.

    The answer is the last reading: terminal, or not when the wait gave up. The pauses between readings grow
    from `FIRST_POLL` to `poll` (`pauses`), and never run past the timeout. `wait(pause)` takes each pause
    (default: sleeps it); one told of the request's changes returns early (the console's progress stream, on
    the store's change notifications: `backends/local/store/changes.py`).
    """
    nap = wait or asyncio.sleep
    started = time.monotonic() if start is None else start
    pause = pauses(poll)
    while True:
        elapsed = time.monotonic() - started
        if report is not None:
            await report(Progress.of(request, elapsed))
        if request.status.terminal or elapsed >= seconds:
            return request
        await nap(min(next(pause), max(0.0, seconds - elapsed)))
        request = await read(request)


def pauses(poll: float) -> Iterator[float]:
    """The pauses of a wait, in seconds: `FIRST_POLL` (or `poll`, when shorter), then 1.5 times longer each
    time, up to `poll`."""
    pause = min(FIRST_POLL, poll)
    while True:
        yield pause
        pause = min(pause * 1.5, poll)


def when_rising(report: Report) -> Report:
    """A report that passes a reading on only when more machines run than in any reading passed before.

    The first reading always passes (it says the request was submitted, usually with 0 running), so the
    running counts `report` sees strictly increase, as MCP requires of `notifications/progress`.
    """
    highest: int | None = None

    async def rising(progress: Progress) -> None:
        nonlocal highest
        if highest is None or progress.running > highest:
            highest = progress.running
            await report(progress)

    return rising
