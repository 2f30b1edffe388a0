"""`api.held` and `api.cors`: what only the REST server reads of `api`. Built on first use (`LazyGroups`): a CLI
call reads neither."""

import re
from typing import Self

import pydantic
from pydantic import Field

from .group import SettingsGroup

__all__ = ["CorsSettings", "HeldSettings"]


class HeldSettings(SettingsGroup):
    """`api.held`: bounds of what the server holds for callers between requests — console sessions, OAuth
    clients and grants — in the store (docs/input.md, "What the server holds"). None ends what another
    caller holds: past a per-user cap the user's own oldest ends; past a per-address cap or rate, 429."""

    sessions_per_user: int = Field(20, ge=1)
    """Console sessions one user holds at once; signing in again past it ends their own oldest."""
    grants_per_user: int = Field(20, ge=1)
    """/mcp OAuth sign-ins (token families) one user holds at once; past it their own oldest ends."""
    clients_per_address: int = Field(100, ge=1)
    """OAuth clients registered from one client address and still kept; more are refused (429)."""
    client_idle_seconds: float = Field(90 * 86400.0, gt=0)
    """An OAuth client no one signed in with for this long is forgotten."""
    creations_per_window: int = Field(30, ge=1)
    """Anonymous creations one client address may make per window, each kind counted on its own (`POST
    /register`, `/authorize`, `POST /oauth/signin`, `POST /ui/login`, federated sign-in starts); then 429."""
    creation_window_seconds: float = Field(60.0, gt=0)


_ORIGIN = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$"
"""A CORS origin: scheme, host and optional port. Patterns here are compiled on first use (`re`'s cache), not at
import: a CLI call that configures no CORS never compiles it."""


class CorsSettings(SettingsGroup):
    """`api.cors`: browser apps served from other origins that may call the REST API (docs/rest.md, "Browser apps
    on other origins"). None by default: a browser then lets only pages of the API's own origin read answers."""

    allow_origins: list[str] = []
    """Origins (`scheme://host[:port]`, exactly as a browser sends them) whose pages may call the API, or `*` for
    any origin (then without credentials)."""
    allow_credentials: bool = False
    """Let the allowed origins' pages send cookies (`Access-Control-Allow-Credentials`); an `Authorization`
    header needs no credentials. Never with `*`."""
    max_age: int = Field(600, ge=0, le=86400)
    """Seconds a browser may cache a preflight answer."""

    @pydantic.field_validator("allow_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            if origin != "*" and not re.match(_ORIGIN, origin):
                raise ValueError(f"{origin[:200]!r} is not an origin: scheme://host[:port], no path, or *")
        return value

    @pydantic.model_validator(mode="after")
    def _no_credentials_to_anyone(self) -> Self:
        if self.allow_credentials and "*" in self.allow_origins:
            raise ValueError("allow_credentials with allow_origins '*' would hand credentials to any site")
        return self
