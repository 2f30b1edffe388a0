"""What every served route is (`Endpoint`, answering a `Reply`) and the one error envelope's bytes.

Apart from `app.py` so the routes defined elsewhere (`ops.py`: /livez, /readyz, /metrics) subclass it
without importing the app that routes to them.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from ..errors import SDKError

if TYPE_CHECKING:
    from starlette.types import Receive

    from .app import Head, PluginApp

__all__ = ["Reply", "error_body"]

JSON_TYPE = b"application/json"

Reply = tuple[int, bytes, str | None]
"""(status, JSON body, user id or None)."""


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def error_body(err: SDKError, camel: bool = False) -> bytes:
    """The one error envelope (auth-service routes add `message`)."""
    body = err.to_envelope()
    if camel:
        body["message"] = err.message
    return dumps(body)


class Endpoint(ABC):
    """A served route: answers one request with a Reply."""

    content_type: bytes = JSON_TYPE
    """Of a successful answer (an error is the JSON envelope)."""
    headers: tuple[tuple[bytes, bytes], ...] = ()
    """Added to every answer."""
    route: str
    """Its path template: the `http_route` label of the request metrics."""

    @abstractmethod
    async def respond(self, app: PluginApp, head: Head, params: dict[str, str], receive: Receive) -> Reply:
        """The reply to one request routed here."""
