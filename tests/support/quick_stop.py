"""A uvicorn server for the tests' servers in a thread, which stops as soon as it is told."""

from __future__ import annotations

import asyncio
import socket
from contextlib import suppress

import uvicorn


class QuickStop(uvicorn.Server):
    """uvicorn's server, stopped as soon as it is told: the suite starts and stops a server for most remote tests,
    and uvicorn's own stop costs 0.15-0.2 s each (its main loop looks at `should_exit` every 0.1 s, and its
    shutdown waits 0.1 s for connections to finish even when none is open). The lifespan shutdown (the engine's
    close) runs as under `serve()`; with a connection or a task still open, uvicorn's own shutdown runs."""

    _wake: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        while not await self.on_tick(counter):  # the tick keeps the Date header fresh, as uvicorn's loop does
            counter = (counter + 1) % 864000
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)

    def stop(self) -> None:
        """Ask the server to exit and wake its main loop (called from another thread)."""
        self.should_exit = True
        if self._loop is not None and self._wake is not None:
            with suppress(RuntimeError):  # its loop has closed already
                self._loop.call_soon_threadsafe(self._wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)
            return
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        if not self.force_exit:
            await self.lifespan.shutdown()
