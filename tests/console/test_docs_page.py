"""/docs in headless Chromium with the network limited to our server: Swagger UI comes from the package
(`fastapi-offline`, pinned), renders the operations, and nothing is fetched from anywhere else."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.console.conftest import shot
from tests.support.backends import base_config
from tests.support.remote import running_server


def test_docs_render_the_operations_from_our_own_origin_only(tmp_path: Path, browser: Any) -> None:
    with running_server(base_config(tmp_path)) as url:
        origin = urlsplit(url).netloc
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        elsewhere: list[str] = []

        def only_ours(route: Any) -> None:
            if urlsplit(route.request.url).netloc == origin:
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort()

        context.route("**/*", only_ours)
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            response = page.goto(f"{url}/docs")
            assert response.status == 200
            csp = response.headers["content-security-policy"]
            assert "script-src 'self';" in csp and "unsafe-inline" not in csp and "http" not in csp
            page.locator(".opblock").first.wait_for(timeout=20000)
            summaries = page.locator(".opblock-summary-path").all_text_contents()
            assert "/api/v1/templates" in {s.replace("\u200b", "") for s in summaries}
            assert len(summaries) > 40
            shot(page, "docs")
            assert elsewhere == [] and errors == []
        finally:
            context.close()
        # the page names nothing outside this origin, and its assets are served with a day's cache
        html = httpx.get(f"{url}/docs").text
        assert "cdn" not in html and "//" not in html.replace("<!doctype html>", "")
        bundle = httpx.get(f"{url}/docs/swagger-ui-bundle.js")
        assert bundle.headers["content-type"].startswith("text/javascript") and len(bundle.content) > 100_000
        assert httpx.get(f"{url}/docs/other.js").status_code == 404
