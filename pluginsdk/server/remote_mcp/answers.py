"""How /mcp answers a POST: one JSON body, unless the request asked for progress (then an event stream).

The `mcp` SDK's session manager answers every request of a session one way, fixed when the manager is made
(`json_response`): an event stream costs several writes and tasks per call (measured in
docs/benchmarks.md), a JSON body one; but only a stream carries the progress notifications of a waiting
call. MCP lets the server choose per POST (the client accepts both), so this module chooses per request:
a stream when the request's `_meta` holds a `progressToken` (or the body is not one plain request), a JSON
body otherwise — which is also what the SDK's 2026-07-28 single-exchange path does on its own.

/mcp runs the manager stateless (`McpHttp`: no session ids, so any server answers any request): each POST
gets a fresh transport, made in the task that handles it, which reads the manager's `json_response` — here a
property answering for the POST at hand (a context variable naming that task). A stateful manager's
transports would get the same behaviour through `Sessions._admit_session`, which overrides a private method
of the SDK's public class: bounded by pyproject (`mcp<3`). Both are fenced by
`tests/mcp/test_http_attacks.py::test_answers_json_unless_progress_was_asked`; should the SDK change them,
requests are answered with the stock event stream (slower, still correct).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar, Token
from typing import Any

from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from ...files import parse_json

__all__ = ["JSON_ANSWER", "Sessions", "answer_json", "wants_json"]

JSON_ANSWER: ContextVar[asyncio.Task[Any] | None] = ContextVar("pluginsdk_mcp_json_answer", default=None)
"""The task handling a POST that is answered with one JSON body. A task, not a flag: the tasks a session
starts from that POST (its server loop and message router, when the POST opens the session) inherit the
context, and must read the default, the stream."""


def answering_json() -> bool:
    return JSON_ANSWER.get() is asyncio.current_task()


def answer_json(wanted: bool) -> Token[asyncio.Task[Any] | None]:
    """Answer the POST this task handles with JSON (`wanted`) or the event stream; the token resets it."""
    return JSON_ANSWER.set(asyncio.current_task() if wanted else None)


class _Transport(StreamableHTTPServerTransport):
    """The SDK's transport, answering in the mode `JSON_ANSWER` gives for the POST at hand."""

    @property
    def is_json_response_enabled(self) -> bool:
        return answering_json()

    @is_json_response_enabled.setter
    def is_json_response_enabled(self, value: bool) -> None:
        """The constructor's setting is not used: the mode is per request."""


class Sessions(StreamableHTTPSessionManager):
    """The SDK's session manager whose sessions answer per request (see the module docstring); a
    2026-07-28 request (no session) is answered per request as well."""

    @property
    def json_response(self) -> bool:
        return answering_json()

    @json_response.setter
    def json_response(self, value: bool) -> None:
        """The constructor's setting is not used: the mode is per request."""

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if type(transport) is StreamableHTTPServerTransport:
            transport.__class__ = _Transport
        return transport


def wants_json(body: bytes) -> bool:
    """A single JSON-RPC request without a `progressToken` in its `_meta` (else: the event stream)."""
    if b"progressToken" in body:
        return False
    try:
        message = parse_json(body)
    except ValueError:
        return False
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return not (isinstance(meta, dict) and "progressToken" in meta)
