"""A browser app on another loopback origin calls the REST API as the VAMS web client does (`Authorization:
Bearer`, JSON bodies, a DELETE with a body), in Debian's Chromium: from an origin in `api.cors` it works; from
another origin the browser blocks it (the preflight carries no CORS header)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import shot
from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server

VAMS_CALLS = """async ([api, token]) => {
  const headers = {Authorization: `Bearer ${token}`, "Content-Type": "application/json"};
  const call = async (method, path, body) => {
    try {
      const r = await fetch(api + path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
      return [r.status, await r.json()];
    } catch (e) {
      return ["blocked", String(e)];
    }
  };
  return [
    await call("GET", "/roles"),
    await call("POST", "/user-roles", {userId: "vams-user", roleName: ["basicReadOnly"]}),
    await call("DELETE", "/user-roles", {userId: "vams-user"}),
  ];
}"""


@pytest.fixture
def app_page_origins() -> Iterator[tuple[str, str]]:
    """Two loopback origins serving a blank page: (allowed, not allowed)."""

    class Blank(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>browser app</title><p>VAMS-like app</p>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), Blank) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield tuple(f"http://127.0.0.1:{s.server_address[1]}" for s in servers)  # type: ignore[misc]
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_an_allowed_origin_makes_the_vams_calls_and_another_is_blocked(
    browser: Any, app_page_origins: tuple[str, str], tmp_path: Path
) -> None:
    allowed, other = app_page_origins
    config = base_config(tmp_path)
    config["api"] = {**config.get("api", {}), "cors": {"allow_origins": [allowed]}}
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps an event loop running in this thread
        key = pool.submit(asyncio.run, admin_key(config)).result()
    with running_server(config) as api:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(allowed)
            answers = page.evaluate(VAMS_CALLS, [api, key])
            shot(page, "cors-allowed-origin")
            assert [a[0] for a in answers] == [200, 200, 200], answers
            assert any(r["roleName"] == "admin" for r in answers[0][1]["message"]["Items"])
            page.goto(other)
            blocked = page.evaluate(VAMS_CALLS, [api, key])
            assert [a[0] for a in blocked] == ["blocked"] * 3, blocked
        finally:
            context.close()
