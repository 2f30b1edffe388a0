"""`api`: the REST server (bounds, CORS, what it holds for callers) and the remote backend's client. CORS and
what the server holds (`api.cors`, `api.held`, in `serving.py`) are built on first use."""

from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, cast

from pydantic import Field

from .group import SECRET, LazyGroups, SettingsGroup

if TYPE_CHECKING:
    from .serving import CorsSettings, HeldSettings

__all__ = ["ApiSettings"]


class ApiSettings(LazyGroups, SettingsGroup):
    lazy_groups: ClassVar[dict[str, str]] = {"cors": "serving.CorsSettings", "held": "serving.HeldSettings"}
    shown_after: ClassVar[dict[str, str]] = {"cors": "max_connections"}

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

    @property
    def cors(self) -> "CorsSettings":
        """Browser apps on other origins that may call the REST API (none by default)."""
        return cast("CorsSettings", self.lazy_group("cors"))

    @property
    def held(self) -> "HeldSettings":
        """What the server holds for callers between requests (`api.held`)."""
        return cast("HeldSettings", self.lazy_group("held"))
