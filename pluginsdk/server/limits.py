"""The server's input limits and the errors for breaking them (all in the one error envelope).

Limits apply before any work: the request head is bounded by the protocol (`_protocol.py`) and again by
the app (so they hold on uvicorn's stock protocol too), the body while it is read and before the caller is
authenticated, JSON depth and literals while it is parsed (`pluginsdk.files.parse_json`, `MAX_DEPTH`).
"""

from __future__ import annotations

from typing import ClassVar

from ..errors import SDKError, ValidationError

__all__ = [
    "BODY_TIMEOUT",
    "HEADER_TIMEOUT",
    "MAX_BODY_BYTES",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_LINE_BYTES",
    "MAX_URL_BYTES",
    "HeadersTooLarge",
    "MethodNotAllowed",
    "PayloadTooLarge",
    "RequestTimeout",
    "RouteNotFound",
    "TooManyConnections",
    "UriTooLong",
]

MAX_BODY_BYTES = 1 << 20
"""Default maximum request body (1 MiB); configuration `api.max_body_bytes`."""
MAX_URL_BYTES = 8192
"""Longest request target (path and query) in bytes; longer is 414."""
MAX_HEADER_LINE_BYTES = 8192
"""Longest header line (name and value) in bytes; longer is 431."""
MAX_HEADER_BYTES = 65536
"""Largest request head (request line and headers) in bytes; larger is 431."""
MAX_HEADERS = 100
"""Most header lines in one request; more is 431."""
HEADER_TIMEOUT = 10.0
"""Default seconds to send a complete request head; configuration `api.header_timeout`."""
BODY_TIMEOUT = 30.0
"""Default seconds for a request's body to arrive in full once its head has; configuration `api.body_timeout`."""


class PayloadTooLarge(ValidationError):
    """The body is larger than the server accepts."""

    http_status: ClassVar[int] = 413


class UriTooLong(ValidationError):
    """The request target is longer than the server accepts."""

    http_status: ClassVar[int] = 414


class HeadersTooLarge(ValidationError):
    """A header line, or the whole head, is larger than the server accepts."""

    http_status: ClassVar[int] = 431


class RequestTimeout(SDKError):
    """The request head did not arrive in time (the connection closes)."""

    error_code = "REQUEST_TIMEOUT"
    http_status: ClassVar[int] = 408


class TooManyConnections(SDKError):
    """The server process serves as many connections as it may (`api.max_connections`); retry later."""

    error_code = "SERVICE_UNAVAILABLE"
    http_status: ClassVar[int] = 503


class RouteNotFound(SDKError):
    """No route has this path."""

    error_code = "NOT_FOUND"
    http_status: ClassVar[int] = 404


class MethodNotAllowed(SDKError):
    """The path is served, not with this method (the response's `Allow` lists those it is)."""

    error_code = "METHOD_NOT_ALLOWED"
    http_status: ClassVar[int] = 405


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"The request body is larger than {limit} bytes.",
        details={"field": "body", "value": None, "expected": f"at most {limit} bytes"},
    )


def uri_too_long() -> UriTooLong:
    return UriTooLong(
        f"The request target is longer than {MAX_URL_BYTES} bytes.",
        details={"field": "path", "value": None, "expected": f"at most {MAX_URL_BYTES} bytes"},
    )


def headers_too_large() -> HeadersTooLarge:
    return HeadersTooLarge(
        f"The request headers are too large (at most {MAX_HEADERS} lines of {MAX_HEADER_LINE_BYTES} bytes, "
        f"{MAX_HEADER_BYTES} bytes in all).",
        details={"field": "headers", "value": None, "expected": f"lines of at most {MAX_HEADER_LINE_BYTES} bytes"},
    )


def head_timed_out(seconds: float) -> RequestTimeout:
    return RequestTimeout(
        f"The request head did not arrive within {seconds:g} seconds.",
        details={"field": "headers", "value": None, "expected": f"a complete head within {seconds:g} s"},
    )


def body_timed_out(seconds: float) -> RequestTimeout:
    return RequestTimeout(
        f"The request body did not arrive within {seconds:g} seconds.",
        details={"field": "body", "value": None, "expected": f"the whole body within {seconds:g} s"},
    )


def too_many_connections(limit: int) -> TooManyConnections:
    return TooManyConnections(
        f"The server has {limit} connections open, as many as it serves; retry shortly.",
        details={"field": "connection", "value": None, "expected": f"at most {limit} connections"},
    )
