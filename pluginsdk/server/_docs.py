"""The /docs page: Swagger UI served by this server from the pinned `fastapi-offline` package, no CDN.

The page loads Swagger UI's script and stylesheet from `/docs/...` and starts it with a script file of ours
(`swagger-init.js`), so its Content-Security-Policy allows scripts and styles from this origin only, and no
inline script; the document it renders is `/openapi.json` on the same origin. Swagger UI's validator badge
(a request to a third-party host) is switched off.
"""

from __future__ import annotations

import functools
import html
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..errors import SDKError
from ._endpoint import Endpoint, Reply, error_body

if TYPE_CHECKING:
    from starlette.types import Receive

    from .app import Head, PluginApp

__all__ = ["DOCS_CSP", "SwaggerMissing", "docs_routes"]

DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = (
    (b"content-security-policy", DOCS_CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - Swagger UI</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"><link rel="icon" href="/docs/favicon.png">
<script src="/docs/swagger-ui-bundle.js" defer></script><script src="/docs/swagger-init.js" defer></script>
</head><body><div id="swagger-ui" data-openapi="/openapi.json"></div></body></html>
"""
_INIT = b"""// Starts Swagger UI on the document named by #swagger-ui's data-openapi (FastAPI's settings, no validator).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi"),
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
});
"""
_ASSETS = {
    "swagger-ui-bundle.js": b"text/javascript; charset=utf-8",
    "swagger-ui.css": b"text/css; charset=utf-8",
    "favicon.png": b"image/png",
}


class SwaggerMissing(SDKError):
    """/docs: Swagger UI's files are not installed (the `server` extra brings them)."""

    error_code = "SWAGGER_UI_MISSING"
    http_status: ClassVar[int] = 503


def _package_dir() -> Path | None:
    """fastapi-offline's static folder, found without importing the package (the `server` extra pins it)."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def _asset(name: str) -> bytes:
    folder = _package_dir()
    if folder is None or not (folder / name).is_file():
        raise SwaggerMissing(
            "Swagger UI's files are not installed: install the server extra (pluginsdk[server]).",
            details={"field": "package", "value": "fastapi-offline", "expected": "installed"},
        )
    return (folder / name).read_bytes()


class _Fixed(Endpoint):
    """One fixed document, read on first use and kept."""

    def __init__(self, route: str, content_type: bytes, load: Callable[[], bytes], cache: bytes) -> None:
        self.route = route
        self.content_type = content_type
        self.headers = (*_HEADERS, (b"cache-control", cache))
        self._load = load
        self._body: bytes | None = None

    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        if self._body is None:
            try:
                self._body = self._load()
            except SwaggerMissing as err:
                return err.http_status, error_body(err), None
        return 200, self._body, None


def docs_routes(title: str) -> list[tuple[str, str, Endpoint]]:
    """The /docs page, its start script, and Swagger UI's files, as (method, path, endpoint)."""
    page = _PAGE.format(title=html.escape(title)).encode()
    day = b"public, max-age=86400"
    routes: list[tuple[str, str, Endpoint]] = [
        ("GET", "/docs", _Fixed("/docs", b"text/html; charset=utf-8", lambda: page, b"no-cache")),
        (
            "GET",
            "/docs/swagger-init.js",
            _Fixed("/docs/swagger-init.js", _ASSETS["swagger-ui-bundle.js"], lambda: _INIT, day),
        ),
    ]
    for name, ctype in _ASSETS.items():
        routes.append(("GET", f"/docs/{name}", _Fixed(f"/docs/{name}", ctype, functools.partial(_asset, name), day)))
    return routes
