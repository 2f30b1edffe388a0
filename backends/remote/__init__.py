"""The remote backend: a typed httpx client of a pluginsdk server, derived from the catalog's REST bindings.

`execute(op)` formats the spec's path with the path fields, sends query fields as parameters and the
body fields as JSON, and parses the reply into the spec's result type (camelCase or snake_case keys
alike). An error envelope becomes the same exception class the local engine raises; no answer at all
becomes `APIConnectionError`, no answer in time `APITimeoutError` — never a server error class.

Retries (jittered exponential backoff on connection errors, timeouts, 408, 429 — but a quota's refusal —,
503, 504, and a 500 or 502 that is not a pluginsdk envelope — a gateway's —, honouring Retry-After) apply
to queries and to commands that carry an idempotency id. A command that has such a field (`request_id` of
`create_request` / `create_return_request`: "the same id again returns the first request") gets a client-made
id when the caller gave none, so a retried call cannot run twice.

`create_request(..., wait=True)` is waited for here, by polling (`pluginsdk/waiting.py`): the server is
asked without `wait`, then the request's status is read until it is finished or its timeout passes, so a
wait may last longer than any HTTP timeout.

Transport: one `httpx.AsyncClient` per backend (`_client.py`), created at start. Each call builds its
`httpx.Request` from prebuilt parts (parsed URLs cached by target, fixed headers, the timeout extension)
and hands it to `client.send`, skipping the client's per-call merging of base URL, params and headers.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import random
import re
import uuid
from typing import Any, TypeVar, cast
from urllib.parse import quote, urlencode

import httpx
from pydantic import ValidationError
from pydantic_core import to_json

from pluginsdk.config import Settings
from pluginsdk.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    ConfigurationError,
    MethodExecutionError,
    error_from_envelope,
)
from pluginsdk.logs import request_id as _request_id
from pluginsdk.operations import Operation, OperationSpec, Rest
from pluginsdk.principal import Principal

from ._client import build_client, timeout_of

__all__ = ["RemoteBackend", "keyring_key"]

log = logging.getLogger("pluginsdk.remote")

R = TypeVar("R")

_RETRY_STATUS = frozenset({408, 429, 503, 504})
"""Answers that say "not now": retried."""
_RETRY_UNLESS_ANSWERED = frozenset({500, 502})
"""Retried when a proxy or gateway sent them; a pluginsdk server's envelope with these (a provider's refusal,
a handler's failure) is its answer, and a command retried with its id would read back the failed request."""
_URL_CACHE = 512
"""Parsed URLs kept per backend (by target); a full cache is dropped and refilled."""


def keyring_key(url: str) -> str | None:
    """The credential `pluginsdk login` kept for `url` (the OS keyring, else its user-only file), or None."""
    from pluginsdk.credentials import read

    return read(url)


def client_id_prefix(spec: OperationSpec) -> str | None:
    """The prefix of the idempotency id a command accepts in its optional `request_id` field (`req-`), read
    from the field's pattern; None for an operation without one."""
    return _client_id_prefix(spec.cls)


@functools.cache
def _client_id_prefix(cls: type[Operation]) -> str | None:
    spec = cls.spec
    field = cls.model_fields.get("request_id")
    if spec.kind != "command" or field is None or field.is_required() or "request_id" not in spec.body_fields:
        return None
    for meta in field.metadata:
        match = re.match(r"\^([a-z]+-)", str(getattr(meta, "pattern", None) or ""))
        if match:
            return match.group(1)
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
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
        **_: Any,
    ) -> None:
        url = api_url or settings.api.url
        source = "argument" if api_url else settings.source_of("api.url")
        if not url:
            raise ConfigurationError(
                "The remote backend needs the server's URL: pass api_url= (or base_url=), set PLUGIN_API_URL, or "
                "api.url in the configuration file.",
                key="api.url",
                source=source,
            )
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise ConfigurationError(
                f"api.url (from {source}) is not a URL: {exc}.", key="api.url", source=source
            ) from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigurationError(
                f"api.url (from {source}) must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000.",
                key="api.url",
                source=source,
            )
        self.settings = settings
        self.base_url = url.rstrip("/")
        self._key = api_key or settings.api.key
        self._token = token or settings.api.token
        self._transport = transport
        self.timeout = timeout_of(settings.api, timeout)
        self.max_retries = settings.api.max_retries if max_retries is None else max_retries
        self._client: httpx.AsyncClient | None = None
        self._headers = httpx.Headers()
        self._json_headers = httpx.Headers()
        self._extensions: dict[str, Any] = {"timeout": self.timeout.as_dict()}
        self._urls: dict[str, httpx.URL] = {}
        self._has_credentials = False

    def _auth_header(self) -> dict[str, str]:
        """The credential header; a credential that cannot be one header line is refused, never sent (a line
        break would smuggle headers in) and never echoed."""
        if self._token:
            name, value = "api.token", f"Bearer {self._token}"
        else:
            key = self._key or keyring_key(self.base_url)
            if not key:
                return {}
            name, value = "api.key", key
        if not value.isascii() or not value.isprintable():
            source = self.settings.source_of(name)
            raise ConfigurationError(
                f"{name} (from {source}) has characters an HTTP header cannot carry (line breaks, control or "
                "non-ASCII characters); check how it was copied.",
                key=name,
                source=source,
            )
        return {"Authorization": value}

    async def start(self) -> None:
        if self._client is not None:
            return
        auth = self._auth_header()
        self._has_credentials = bool(auth)
        fixed = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate", "User-Agent": "pluginsdk-remote"}
        self._headers = httpx.Headers({**fixed, **auth})
        self._json_headers = httpx.Headers({**fixed, **auth, "Content-Type": "application/json"})
        self._client = build_client(self.settings, self.timeout, self._transport)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def execute(self, operation: Operation[R], principal: Principal | None = None) -> R:
        from pluginsdk.waiting import reports_progress, request_and_wait

        if reports_progress(operation):  # waited for by polling, not inside one HTTP call
            return cast(R, await request_and_wait(_Calls(self), operation, _no_report))
        return await self.call(operation)

    async def call(self, operation: Operation[R]) -> R:
        """One operation, one HTTP exchange (with retries): the reply parsed into the result type.

        Steps: the binding, the idempotency id, the request target (path and query), the body, the exchange,
        the answer (an error envelope raised, a redirect refused, a reply parsed)."""
        spec: OperationSpec[R] = operation.spec
        if spec.rest is None:
            raise MethodExecutionError(f"{spec.name} has no REST binding; it cannot run remotely.")
        rest = spec.rest
        if self._client is None:
            await self.start()
        prefix = client_id_prefix(spec)
        if prefix is not None and getattr(operation, "request_id", None) is None:
            operation = operation.model_copy(update={"request_id": f"{prefix}{uuid.uuid4()}"})
        target = _path(spec, rest.path, operation) + _query(spec, operation)
        content = _body(spec, rest, operation, client_id=prefix is not None)
        retry = rest.method in ("GET", "HEAD") or spec.kind == "query" or bool(getattr(operation, "request_id", None))
        response = await self._send(rest.method, target, content, retry=retry, name=spec.name)
        return self._answer(spec, response)

    def _answer(self, spec: OperationSpec[R], response: httpx.Response) -> R:
        """The reply as the spec's result type; an error envelope as its exception, a redirect refused."""
        if response.status_code >= 400:
            try:
                data = json.loads(response.content)
            except ValueError:
                data = None
            raise error_from_envelope(data, response.status_code, response.headers.get("x-request-id"))
        if response.status_code >= 300:
            where = response.headers.get("location", "elsewhere")[:200]
            raise ConfigurationError(
                f"{spec.name}: {self.base_url} redirects ({response.status_code}) to {where}; set api.url to the "
                "server's own URL (redirects are not followed: they would resend credentials).",
                key="api.url",
                source=self.settings.source_of("api.url"),
            )
        try:  # straight from the bytes, one pass in pydantic-core
            result: R = spec.result_type.model_validate_json(response.content)  # type: ignore[attr-defined]
            return result
        except ValidationError:
            raise MethodExecutionError(
                f"{spec.name}: the answer from {self.base_url} is not a {spec.result_type.__name__} (is api.url a "
                "pluginsdk server of this version?).",
                details={"url": self.base_url, "status": response.status_code},
                request_id=response.headers.get("x-request-id"),
            ) from None

    def _url(self, target: str) -> httpx.URL:
        url = self._urls.get(target)
        if url is None:
            if len(self._urls) >= _URL_CACHE:
                self._urls.clear()
            url = self._urls[target] = httpx.URL(self.base_url + target)
        return url

    async def _send(self, method: str, target: str, content: bytes | None, *, retry: bool, name: str) -> httpx.Response:
        """The exchange, attempt after attempt (one unless `retry`), with backoff between attempts."""
        attempts = 1 + (self.max_retries if retry else 0)
        url = self._url(target)
        headers = self._headers if content is None else self._json_headers
        rid = _request_id.get()
        if rid is not None:  # the caller's request id (CLI invocation), so server log lines match ours
            headers = httpx.Headers({**headers, "X-Request-ID": rid})
        for attempt in range(1, attempts + 1):
            request = httpx.Request(method, url, headers=headers, content=content, extensions=self._extensions)
            response, delay = await self._attempt(request, attempt, attempts, retry=retry, name=name)
            if response is not None:
                return response
            log.debug("retrying %s %s in %.2fs (attempt %d of %d)", method, url.path, delay, attempt + 1, attempts)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(
        self, request: httpx.Request, attempt: int, attempts: int, *, retry: bool, name: str
    ) -> tuple[httpx.Response | None, float]:
        """One attempt: (the response to return, 0) or (None, the delay before the next attempt). A failure of
        the last attempt, or one no retry can mend, raises."""
        assert self._client is not None
        try:
            response = await self._client.send(request)
        except httpx.TimeoutException as exc:
            if attempt >= attempts:
                raise self._timeout_error(name, exc, retry) from exc
            return None, self._backoff(attempt, None)
        except httpx.RequestError as exc:
            if attempt >= attempts or _certificate_rejected(exc):
                raise self._connection_error(name, exc, retry) from exc
            return None, self._backoff(attempt, None)
        if response.status_code == 401 and not self._has_credentials:
            raise AuthenticationError(
                "The server wants credentials: pass api_key=, set PLUGIN_API_KEY, or run `pluginsdk login`."
            )
        if attempt >= attempts or not _transient(response):
            return response, 0.0
        return None, self._backoff(attempt, response.headers.get("retry-after"))

    def _timeout_error(self, name: str, exc: httpx.TimeoutException, retried: bool) -> APITimeoutError:
        phase = {
            httpx.ConnectTimeout: ("connect", "connecting"),
            httpx.ReadTimeout: ("read", "waiting for the answer"),
            httpx.WriteTimeout: ("write", "sending the request"),
            httpx.PoolTimeout: ("pool", "waiting for a free connection"),
        }.get(type(exc), ("read", "waiting for the answer"))
        seconds = self.timeout.as_dict()[phase[0]]
        tries = f" (after {1 + self.max_retries} attempts)" if retried and self.max_retries else ""
        unknown = "" if retried or phase[0] in ("connect", "pool") else " It may or may not have run."
        return APITimeoutError(
            f"{name}: timed out {phase[1]} ({phase[0]} timeout {seconds}s) at {self.base_url}{tries}.{unknown}",
            details={"url": self.base_url, "phase": phase[0], "timeout": seconds, "reason": type(exc).__name__},
        )

    def _connection_error(self, name: str, exc: httpx.RequestError, retried: bool) -> APIConnectionError:
        if _certificate_rejected(exc):
            reason = "the server's TLS certificate was not accepted (set api.ca_bundle to trust a private CA)"
        else:
            reason = str(exc) or type(exc).__name__
        tries = f" after {1 + self.max_retries} attempts" if retried and self.max_retries else ""
        sent = not isinstance(exc, httpx.ConnectError | httpx.UnsupportedProtocol | httpx.ProxyError)
        unknown = " It may or may not have run." if sent and not retried else ""
        return APIConnectionError(
            f"{name}: cannot reach the pluginsdk server at {self.base_url}{tries}: {reason}.{unknown}",
            details={"url": self.base_url, "reason": type(exc).__name__},
        )

    @staticmethod
    def _backoff(attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), 30.0)
            except ValueError:
                pass
        base: float = min(0.25 * 2 ** (attempt - 1), 5.0)
        return base * (0.5 + random.random())  # jitter, not security


def _path(spec: OperationSpec, path: str, operation: Operation) -> str:
    """The path with each `{field}` filled in, percent-encoded whole (a `/` in a value stays in its segment)."""
    for name in spec.path_fields:
        path = path.replace("{" + name + "}", quote(str(getattr(operation, name)), safe=""))
    return path


def _query(spec: OperationSpec, operation: Operation) -> str:
    """`?name=value&...` of the query fields that are set (lists repeated, booleans lowercase), or ""."""
    if not spec.query_fields:
        return ""
    query: list[tuple[str, str]] = []
    dumped = operation.model_dump(mode="json", include=set(spec.query_fields))
    for name in spec.query_fields:
        value = dumped.get(name)
        if value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            query.append((name, str(item).lower() if isinstance(item, bool) else str(item)))
    return "?" + urlencode(query) if query else ""


def _body(spec: OperationSpec, rest: Rest, operation: Operation, *, client_id: bool) -> bytes | None:
    """The JSON body of the body fields (the one `body_field` whole), or None when there are none. Only fields
    set are sent, but REST-only defaults go with the SDK's value, and a client-made `request_id` always.

    Encoded in pydantic-core (compact UTF-8, like json.dumps with ensure_ascii=False; an operation holds no
    NaN: `Operation._storable`): straight from the operation where nothing is added, in one pass."""
    if not spec.body_fields:
        return None
    if rest.body_field is not None:
        return to_json(operation.model_dump(mode="json", include={rest.body_field})[rest.body_field])
    fields = set(spec.body_fields)
    if not client_id and fields.isdisjoint(rest.defaults):
        return operation.__pydantic_serializer__.to_json(operation, include=fields, exclude_unset=True)
    body = operation.model_dump(mode="json", include=fields, exclude_unset=True)
    for name in rest.defaults:  # the SDK's default, not the REST one (create_constraint: 409)
        if name in fields:
            body.setdefault(name, getattr(operation, name))
    if client_id:
        body["request_id"] = operation.request_id  # type: ignore[attr-defined]
    return to_json(body)


def _transient(response: httpx.Response) -> bool:
    """Whether an answer is worth a retry (see `_RETRY_STATUS`). A quota's refusal (429 naming the quota) is
    not: it is the caller's to decide when to come back (its details say when capacity frees)."""
    if response.status_code == 429:
        return not _quota_refusal(response)
    if response.status_code in _RETRY_STATUS:
        return True
    if response.status_code not in _RETRY_UNLESS_ANSWERED:
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return True
    return not (isinstance(body, dict) and "error_code" in body)


def _quota_refusal(response: httpx.Response) -> bool:
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    details = body.get("details") if isinstance(body, dict) else None
    return isinstance(details, dict) and "quota" in details


def _certificate_rejected(exc: BaseException) -> bool:
    """Whether a transport error is TLS verification failing (retrying cannot help)."""
    return "CERTIFICATE_VERIFY_FAILED" in str(exc) or "certificate verify failed" in str(exc)


class _Calls:
    """The backend as a `waiting.Executor`: each operation one plain call."""

    __slots__ = ("backend",)

    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend

    async def execute(self, operation: Operation[R], /) -> R:
        return await self.backend.call(operation)


async def _no_report(progress: object) -> None:
    """A plain `wait=True` reports nothing on the way."""
