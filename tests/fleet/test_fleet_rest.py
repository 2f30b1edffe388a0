"""An authenticated REST read answers through the fleet: through HAProxy on every server, through a server's
workers, and without one failure for several clients reading at once while every server restarts in turn (a
rolling deploy)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.fleet import Fleet

pytestmark = pytest.mark.asyncio(loop_scope="package")

CALLERS = 6
"""Clients calling back to back during the rolling restart, each on a keep-alive connection of its own: HAProxy
holds idle connections to every server for them, the ones a server stopped while in rotation would close."""


async def test_an_authenticated_read_works_through_the_balancer_and_a_rolling_restart(fleet: Fleet) -> None:
    headers = {"authorization": fleet.key}
    async with httpx.AsyncClient(base_url=fleet.url, headers=headers, timeout=30) as client:
        made = await client.post("/api/v1/templates", json={"template_id": "web", "image_id": "ami-1"})
        assert made.status_code == 201, made.text
        for _ in range(2 * len(fleet.servers)):  # round-robin: every server answers the same
            read = await client.get("/api/v1/templates/web")
            assert read.status_code == 200 and read.json()["template"]["template_id"] == "web", read.text
        assert (await client.get("/api/v1/templates/web", headers={"authorization": "psdk_wrong"})).status_code == 401
        if len(fleet.servers) < 2:
            return  # one server: a restart is downtime, not a rolling deploy
        answers: list[int | str] = []
        async with fleet.rolling() as restarting:
            await asyncio.gather(*(_calls_until(fleet, restarting, answers) for _ in range(CALLERS)))
        answers.append((await client.get("/api/v1/templates/web")).status_code)
    assert len(answers) > 10 * CALLERS and set(answers) == {200}, [a for a in answers if a != 200]


async def _calls_until(fleet: Fleet, restarting: asyncio.Task[None], answers: list[int | str]) -> None:
    """Calls of one client until `restarting` is done, a read and a POST with a body in turn (a template's
    validation: it stores nothing): each status, or the error that replaced it."""
    template = {"template_id": "web", "image_id": "ami-1"}
    async with httpx.AsyncClient(base_url=fleet.url, headers={"authorization": fleet.key}, timeout=30) as client:
        while not restarting.done():
            try:
                answers.append((await client.get("/api/v1/templates/web")).status_code)
                answers.append((await client.post("/api/v1/templates/validate", json=template)).status_code)
            except httpx.TransportError as exc:
                answers.append(f"{type(exc).__name__}: {exc}")
