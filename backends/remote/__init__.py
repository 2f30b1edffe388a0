"""The remote backend: a typed httpx client of a pluginsdk server, derived from the catalog's REST bindings.

`execute(op)` formats the spec's path with the path fields, sends query fields as parameters and the
body fields as JSON, and parses the reply into the spec's result type (camelCase or snake_case keys
alike). An error envelope becomes the same exception class the local engine raises. Queries — and
commands that carry a pre-made id (`request_id`) — are retried with jittered exponential backoff on
connection errors, 408, 429 and 5xx, honouring Retry-After.

Transport: by default the backend's own lean keep-alive HTTP/1.1 client (`_http.LeanHTTP`), which costs a
fraction of httpx's per-call CPU; given `transport=` (tests, custom stacks), or with a proxy configured in
the environment, an `httpx.AsyncClient` as before. Both raise httpx's exception types, so retries, timeouts
and error mapping are one code path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from pluginsdk._constants import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from pluginsdk.config import Settings
from pluginsdk.errors import AuthenticationError, ConfigurationError, MethodExecutionError, error_from_envelope
from pluginsdk.operations import Operation
from pluginsdk.principal import Principal

from ._http import LeanHTTP, Reply, lean_supported

__all__ = ["RemoteBackend"]

log = logging.getLogger("pluginsdk.remote")

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
KEYRING_SERVICE = "pluginsdk"


def keyring_key(url: str) -> str | None:
    """The API key stored for `url` by `pluginsdk login`, or None (a missing keyring backend is not an error)."""
    try:
        import keyring
        from keyring.errors import KeyringError

        try:
            value: str | None = keyring.get_password(KEYRING_SERVICE, url.rstrip("/"))
            return value
        except (KeyringError, RuntimeError):
            return None
    except ImportError:  # pragma: no cover - keyring is a core dependency
        return None


class RemoteBackend:
    """Runs operations on a pluginsdk server over HTTP."""

    name = "remote"

    def __init__(
        self,
        settings: Settings,
        *,
        api_url: str | None = None,
        api_key: str | None = None,
        token: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        **_: Any,
    ) -> None:
        url = api_url or settings.api.url
        if not url:
            raise ConfigurationError(
                "The remote backend needs the server's URL: pass api_url=, set PLUGIN_API_URL, or api.url in the "
                "configuration file.",
                key="api.url",
                source=settings.source_of("api.url"),
            )
        self.base_url = url.rstrip("/")
        self._key = api_key or settings.api.key
        self._token = token or settings.api.token
        self._transport = transport
        self.timeout = timeout
        self.max_retries = max_retries
        self._client: httpx.AsyncClient | None = None
        self._lean: LeanHTTP | None = None

    def _auth_header(self) -> dict[str, str]:
        if self._token:
            return {"Authorization": f"Bearer {self._token}"}
        key = self._key or keyring_key(self.base_url)
        return {"Authorization": key} if key else {}

    async def start(self) -> None:
        if self._client is not None or self._lean is not None:
            return
        headers = {**self._auth_header(), "User-Agent": "pluginsdk-remote"}
        if self._transport is None and lean_supported(self.base_url, headers, os.environ):
            self._lean = LeanHTTP(self.base_url, headers, self.timeout)
        else:
            self._client = httpx.AsyncClient(
                base_url=self.base_url, headers=headers, timeout=self.timeout, transport=self._transport
            )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._lean is not None:
            await self._lean.aclose()
            self._lean = None

    async def execute(self, operation: Operation, principal: Principal | None = None) -> Any:
        spec = operation.spec
        if spec.rest is None:
            raise MethodExecutionError(f"{spec.name} has no REST binding; it cannot run remotely.")
        if self._client is None and self._lean is None:
            await self.start()
        rest = spec.rest
        path = rest.path
        for name in spec.path_fields:
            path = path.replace("{" + name + "}", quote(str(getattr(operation, name)), safe=""))
        query: list[tuple[str, str]] = []
        dumped = operation.model_dump(mode="json", include=set(spec.query_fields))
        for name in spec.query_fields:
            value = dumped.get(name)
            if value is None:
                continue
            for item in value if isinstance(value, list) else [value]:
                query.append((name, str(item).lower() if isinstance(item, bool) else str(item)))
        body: Any = None
        if spec.body_fields:
            if rest.body_field is not None:
                body = operation.model_dump(mode="json", include={rest.body_field})[rest.body_field]
            else:
                body = operation.model_dump(mode="json", include=set(spec.body_fields), exclude_unset=True)
        idempotent = (
            rest.method in ("GET", "HEAD") or spec.kind == "query" or bool(getattr(operation, "request_id", None))
        )
        response = await self._send(rest.method, path, query, body, idempotent=idempotent, name=spec.name)
        if response.status_code >= 400:
            try:
                data = json.loads(response.content)
            except ValueError:
                data = None
            raise error_from_envelope(data, response.status_code, response.headers.get("x-request-id"))
        try:  # straight from the bytes, one pass in pydantic-core
            return spec.result_type.model_validate_json(response.content)
        except ValidationError:  # not JSON, or not this shape: raise what validating the parsed value raises
            try:
                data = json.loads(response.content)
            except ValueError:
                data = None
            return spec.result_type.model_validate(data)

    async def _request(
        self, method: str, path: str, query: list[tuple[str, str]], body: Any, idempotent: bool
    ) -> Reply:
        if self._lean is not None:
            return await self._lean.request(method, path, query, body, idempotent=idempotent)
        assert self._client is not None
        params: list[tuple[str, str | int | float | bool | None]] = list(query)
        r = await self._client.request(method, path, params=params or None, json=body)
        return Reply(r.status_code, r.headers, r.content)

    async def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: Any,
        *,
        idempotent: bool,
        name: str,
    ) -> Reply:
        attempts = 1 + (self.max_retries if idempotent else 0)
        for attempt in range(1, attempts + 1):
            try:
                response = await self._request(method, path, query, body, idempotent)
            except httpx.TimeoutException as exc:
                if attempt >= attempts:
                    raise MethodExecutionError(f"{name}: the server did not answer within {self.timeout}s.") from exc
                delay = self._backoff(attempt, None)
            except httpx.TransportError as exc:
                if attempt >= attempts:
                    raise MethodExecutionError(
                        f"{name}: cannot reach the pluginsdk server at {self.base_url} ({type(exc).__name__})."
                    ) from exc
                delay = self._backoff(attempt, None)
            else:
                if response.status_code == 401 and not self._auth_header():
                    raise AuthenticationError(
                        "The server wants credentials: pass api_key=, set PLUGIN_API_KEY, or run `pluginsdk login`."
                    )
                if response.status_code not in _RETRY_STATUS or attempt >= attempts:
                    return response
                delay = self._backoff(attempt, response.headers.get("retry-after"))
            log.debug("retrying %s %s in %.2fs (attempt %d of %d)", method, path, delay, attempt + 1, attempts)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _backoff(attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), 30.0)
            except ValueError:
                pass
        base: float = min(0.25 * 2 ** (attempt - 1), 5.0)
        return base * (0.5 + random.random())  # jitter, not security
