"""A request's page follows its state live: server-sent events show a change within a second, and without
EventSource the page falls back to polling. Machines boot slowly here, so the state changes only when the
test cancels the request (through the REST API, as another client would)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.console.conftest import confirm, shot, sign_in_with_key
from tests.console.test_console import _watch_errors
from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server


@pytest.fixture
def slow_site(tmp_path: Path) -> Iterator[tuple[str, str]]:
    config = base_config(tmp_path, provider={"local": {"boot_delay": 120, "terminate_delay": 0.05, "seed": 7}})
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps an event loop running in this thread
        key = pool.submit(asyncio.run, admin_key(config)).result()
    with running_server(config) as url:
        httpx.post(
            f"{url}/api/v1/templates", json={"template_id": "slow", "image_id": "img"}, headers={"authorization": key}
        )
        yield url, key


def _open_request(page: Any, url: str, key: str) -> str:
    sign_in_with_key(page, url, key)
    page.goto(f"{url}/ui/requests")
    page.fill("#f-template_id", "slow")
    page.get_by_role("button", name="Request machines").click()
    page.wait_for_url(re.compile(r".*/ui/requests/req-"))
    return str(page.url.rsplit("/", 1)[1])


def _cancel_and_time(page: Any, url: str, key: str, request_id: str) -> float:
    """Seconds from the cancel's answer to the page showing the new state."""
    assert page.locator("#progress .state").text_content() != "cancelled"
    answer = httpx.delete(f"{url}/api/v1/requests/{request_id}", headers={"authorization": key})
    assert answer.status_code == 200, answer.text
    started = time.monotonic()
    page.locator("#progress .state", has_text="cancelled").wait_for(timeout=5000)
    return time.monotonic() - started


def test_a_state_change_shows_within_a_second_through_server_sent_events(slow_site: tuple[str, str], page: Any) -> None:
    url, key = slow_site
    errors = _watch_errors(page)
    request_id = _open_request(page, url, key)
    page.locator("#progress[data-live=events]").wait_for(timeout=5000)
    page.wait_for_timeout(600)  # the stream is quiet: nothing changed
    assert _cancel_and_time(page, url, key, request_id) < 1.0
    assert page.locator("#progress").get_attribute("data-live") == "events"  # no fallback to polling
    assert page.locator("#progress [data-final]").count() == 1
    shot(page, "request-progress-live")
    assert errors == []


def test_without_event_source_the_page_polls(slow_site: tuple[str, str], page: Any) -> None:
    url, key = slow_site
    page.add_init_script("delete window.EventSource")
    request_id = _open_request(page, url, key)
    page.locator("#progress[data-live=poll]").wait_for(timeout=5000)
    _cancel_and_time(page, url, key, request_id)  # shown at the next poll (every 0.5 s; not timed here)


def test_the_event_stream_is_authorized_like_the_page(slow_site: tuple[str, str], page: Any) -> None:
    url, key = slow_site
    request_id = _open_request(page, url, key)
    assert httpx.delete(f"{url}/api/v1/requests/{request_id}", headers={"authorization": key}).status_code == 200
    # a final request's stream is its one last event, then the end
    stream = page.request.get(f"{url}/ui/requests/{request_id}/events")
    assert stream.status == 200 and stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-store"
    assert re.search(r"^event: final\ndata: <div data-state=\"cancelled\"", stream.text(), re.M)
    assert page.request.get(f"{url}/ui/requests/req-missing/events").status == 404
    page.click("form.signout button")  # signed out: no stream, the way to the sign-in page
    page.wait_for_url(re.compile(r".*/ui/login$"))
    answer = page.request.get(f"{url}/ui/requests/{request_id}/events", max_redirects=0)
    assert answer.status == 303 and "/ui/login" in answer.headers["location"]


def test_an_open_stream_ends_when_its_session_is_signed_out(slow_site: tuple[str, str]) -> None:
    url, key = slow_site
    made = httpx.post(
        f"{url}/api/v1/machines", json={"template_id": "slow", "machine_count": 1}, headers={"authorization": key}
    )
    assert made.status_code in (200, 201, 202), made.text
    request_id = made.json()["request_id"]
    with httpx.Client(base_url=url, timeout=10) as client:
        form = client.get("/ui/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert token
        assert client.post("/ui/login", data={"csrf": token.group(1), "api_key": key}).status_code == 303
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/").text)
        assert csrf
        with client.stream("GET", f"/ui/requests/{request_id}/events") as stream:
            lines = stream.iter_lines()
            assert next(lines) == "retry: 1000"
            assert next(lines) == ""
            assert next(lines) == "event: progress"
            assert client.post("/ui/logout", data={"csrf": csrf.group(1)}).status_code == 303
            rest = list(lines)  # the server ends the stream at its next read (else: the client's read timeout)
            assert not any(line.startswith("event:") for line in rest)


def test_cancelling_a_request_in_the_console_asks_first(slow_site: tuple[str, str], page: Any) -> None:
    url, key = slow_site
    request_id = _open_request(page, url, key)
    page.get_by_role("button", name="Cancel request").click()
    assert "running ones keep running" in str(page.locator("p.warning").text_content())
    confirm(page, "Cancel request", "confirm-cancel-request")
    page.wait_for_url(re.compile(rf".*/ui/requests/{request_id}\?done="))
    assert page.locator("#progress .state").text_content() == "cancelled"
    assert page.get_by_role("button", name="Cancel request").count() == 0  # a final request offers none
