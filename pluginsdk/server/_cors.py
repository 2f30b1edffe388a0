"""CORS for the REST API: which browser apps on other origins may call it (`api.cors`; docs/rest.md).

None by default: without an allow-list no answer carries CORS headers, and a browser lets only pages of the
API's own origin read them. With one, a request whose `Origin` is allowed gets `Access-Control-Allow-Origin`
naming it (and `Access-Control-Allow-Credentials` only when `allow_credentials`); a preflight `OPTIONS` is
answered by the door before any authentication (a preflight never carries credentials), with the methods the
path serves and the request headers the API reads. An origin not allowed gets no CORS header: its page's
script cannot read the answer, and its preflight fails, so the browser never sends the call. A request
without `Origin` (every non-browser client) costs one header comparison in the door's header pass.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Cors"]

_HEADERS = (b"authorization", b"content-type", b"x-request-id", b"accept")
"""Request headers a browser app may send (what the API reads, and what fetch sends)."""
_EXPOSED = b"x-request-id, retry-after, allow"
_VARY = (b"vary", b"Origin")


class Cors:
    """The allow-list, compiled once; the headers of one answer."""

    def __init__(self, settings: Any) -> None:
        origins = list(settings.allow_origins)
        self.anyone = "*" in origins
        self.origins = frozenset(o.encode("latin-1") for o in origins if o != "*")
        self.credentials = bool(settings.allow_credentials) and not self.anyone
        self.max_age = str(int(settings.max_age)).encode()

    @classmethod
    def of(cls, settings: Any) -> Cors | None:
        """The server's CORS from `api.cors`, or None when no origin is allowed (the default)."""
        cors = getattr(settings, "cors", None)
        return cls(cors) if cors is not None and cors.allow_origins else None

    def _allow(self, origin: bytes) -> list[tuple[bytes, bytes]] | None:
        if origin in self.origins:
            found = [(b"access-control-allow-origin", origin), _VARY]
            if self.credentials:
                found.append((b"access-control-allow-credentials", b"true"))
            return found
        if self.anyone:
            return [(b"access-control-allow-origin", b"*")]
        return None

    def answer(self, origin: bytes) -> list[tuple[bytes, bytes]]:
        """Headers of an answer to an actual request from `origin` (none when it is not allowed)."""
        found = self._allow(origin)
        if found is None:
            return [_VARY]
        found.append((b"access-control-expose-headers", _EXPOSED))
        return found

    def preflight(self, origin: bytes, allow: bytes, requested: bytes | None) -> list[tuple[bytes, bytes]]:
        """Headers of the answer to a preflight from `origin` on a path serving `allow` (its methods); the
        requested headers are granted those the API reads."""
        found = self._allow(origin)
        if found is None:
            return [_VARY]
        asked = [h.strip().lower() for h in (requested or b"").split(b",") if h.strip()]
        granted = b", ".join(h for h in asked if h in _HEADERS) or b"content-type"
        found += [
            (b"access-control-allow-methods", allow),
            (b"access-control-allow-headers", granted),
            (b"access-control-max-age", self.max_age),
        ]
        return found
