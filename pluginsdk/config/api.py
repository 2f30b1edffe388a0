"""`api`: the REST server (bounds, CORS, what it holds for callers) and the remote backend's client."""

import re
from typing import Annotated, Literal, Self

import pydantic
from pydantic import Field

from .group import SECRET, SettingsGroup

__all__ = ["ApiSettings", "CorsSettings", "HeldSettings"]


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


class ApiSettings(SettingsGroup):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    workers: int = Field(1, ge=1, le=64)
    """Server worker processes on the one port (`pluginsdk server start --workers N`)."""
    metrics: Literal["loopback", "authenticated", "open", "off"] = "loopback"
    """Who may read the server's /metrics: loopback clients only, any caller the policy lets GET /metrics,
    anyone, or nobody."""
    max_body_bytes: int = Field(1 << 20, ge=1)
    """Largest request body the REST server reads (413 beyond it)."""
    header_timeout: float = Field(10.0, gt=0)
    """Seconds a connection has to send a complete request head, from when it opens or its last response ends
    (then it is closed: with 408 if part of a head came)."""
    body_timeout: float = Field(30.0, gt=0)
    """Seconds a request's body has to arrive in full once its head has (then 408, and the connection closes)."""
    keep_alive_timeout: float = Field(5.0, gt=0)
    """Seconds an idle keep-alive connection stays open after a response."""
    max_connections: int = Field(512, ge=1)
    """Connections one server process serves at once; a request on a connection past it is answered 503 (keep
    it below the process's file-descriptor limit, `ulimit -n`)."""
    cors: CorsSettings = Field(default_factory=CorsSettings.model_construct)
    """Browser apps on other origins that may call the REST API (none by default)."""
    url: str | None = None
    """Base URL of a pluginsdk server (remote backend)."""
    key: Annotated[str | None, SECRET] = None
    """API key for the remote backend (better: `pluginsdk login`, kept in the OS keyring)."""
    token: Annotated[str | None, SECRET] = None
    """Bearer token for the remote backend."""
    verify: bool = True
    """Verify the server's TLS certificate (remote backend). Off only for a test server."""
    ca_bundle: str | None = None
    """PEM file of the CA certificates to trust instead of the built-in bundle (a private CA)."""
    client_cert: str | None = None
    """PEM client certificate for mutual TLS (may hold the key too)."""
    client_key: str | None = None
    """PEM private key of `client_cert`, when it is a file of its own."""
    trust_env: bool = True
    """Take proxies (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY) and SSL_CERT_FILE/SSL_CERT_DIR from the
    environment."""
    connect_timeout: float = Field(5.0, gt=0)
    """Seconds to establish a connection (TCP and TLS)."""
    read_timeout: float = Field(30.0, gt=0)
    """Seconds to wait for the server's answer to one call (a `wait=True` request polls, so it may wait longer)."""
    write_timeout: float = Field(30.0, gt=0)
    """Seconds to send one request body."""
    pool_timeout: float = Field(10.0, gt=0)
    """Seconds to wait for a free connection of the pool."""
    max_retries: int = Field(2, ge=0, le=10)
    """Retries of queries and of commands that carry an idempotency id, on connection errors, 408, 429, 5xx."""
    held: HeldSettings = Field(default_factory=HeldSettings.model_construct)
