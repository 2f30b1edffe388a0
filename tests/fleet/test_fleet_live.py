"""Live progress across the fleet: a console progress stream held on one server shows a state change another
server wrote within a second (PostgreSQL: LISTEN/NOTIFY; SQLite's workers: polling the store). The `slow`
instance's machines stay pending: the request changes only when the test completes it."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from tests.support.fleet import Fleet

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def _signed_in(client: httpx.AsyncClient, key: str) -> None:
    form = await client.get("/ui/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token, form.text[:500]
    signed = await client.post("/ui/login", data={"csrf": token.group(1), "api_key": key, "next": "/ui/"})
    assert signed.status_code in (200, 303), signed.text[:500]


async def _next_event(lines: Any) -> tuple[str, str]:
    """The next server-sent event's name and data (comments and the retry line skipped)."""
    name, data = "", []
    async for line in lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and name:
            return name, "\n".join(data)
    raise AssertionError("the stream ended")


async def test_a_stream_on_one_server_sees_a_request_completed_by_another_within_a_second(fleet: Fleet) -> None:
    near, far = fleet.servers[0].url, fleet.servers[-1].url
    auth = {"authorization": fleet.key}
    async with httpx.AsyncClient(timeout=30, headers=auth) as api:
        made = await api.post(
            f"{near}/api/v1/templates", json={"template_id": "slow", "image_id": "img", "provider": "slow"}
        )
        assert made.status_code == 201, made.text
        asked = await api.post(f"{near}/api/v1/machines", json={"template_id": "slow", "machine_count": 1})
        request_id = asked.json()["request_id"]
        # one connection: the sign-in and the stream reach the same server process (and worker)
        one = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(base_url=near, timeout=30, limits=one) as console:
            await _signed_in(console, fleet.key)
            async with console.stream("GET", f"/ui/requests/{request_id}/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                lines = stream.aiter_lines()
                assert (await _next_event(lines))[0] == "progress"
                done = await api.post(f"{far}/api/v1/requests/{request_id}/complete", json={})
                assert done.status_code == 200, done.text
                written = time.monotonic()
                name, data = await _next_event(lines)
                seen = time.monotonic() - written
    assert name == "final" and "data-final" in data, (name, data)
    assert seen < 1.0, seen
