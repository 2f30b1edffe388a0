"""An authenticated REST read answers through the fleet: through HAProxy on every server, through a server's
workers, and without one failure while every server restarts in turn (a rolling deploy)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.fleet import Fleet

pytestmark = pytest.mark.asyncio(loop_scope="package")


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
        answers: list[int] = []
        async with fleet.rolling() as restarting:
            while not restarting.done():
                answers.append((await client.get("/api/v1/templates/web")).status_code)
                await asyncio.sleep(0.01)
        answers.append((await client.get("/api/v1/templates/web")).status_code)
    assert len(answers) > 10 and set(answers) == {200}, answers
