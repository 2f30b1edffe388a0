"""Layered configuration: arguments > PLUGIN_* environment > file (or SDK dict) > defaults.

Every value remembers where it came from, so a wrong one becomes a
`ConfigurationError` that names the key and the source ("storage.path from
PLUGIN_STORAGE_PATH"). A key no group knows is an error too, at every level (`provider.aws`,
`app.authProvider.useManaged`, ...), with the closest valid key: a misspelling must not silently fall back
to a default (`provider: {tpye: aws}` would run the local provider, `provider.aws.endpont_url` would call
the real AWS endpoint). File formats: JSON or YAML.

Secrecy is a property of the model: a field annotated `Annotated[..., SECRET]` is shown as `***` wherever
the configuration is shown, and every shown text has the credentials of URLs and DSNs masked.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlparse

import pydantic
from pydantic import BeforeValidator, ConfigDict, Field, Strict
from pydantic_core import PydanticCustomError

from .errors import ConfigurationError

__all__ = [
    "ENV_VARS",
    "SECRET",
    "AppSettings",
    "AuditSettings",
    "AuthProviderSettings",
    "AuthorizerOptionsSettings",
    "ExternalIdpSettings",
    "FederationSettings",
    "HeldSettings",
    "ManagedPoolSettings",
    "PasswordHashingSettings",
    "SamlSettings",
    "Settings",
    "SettingsGroup",
    "SignInLimitsSettings",
    "SmtpSettings",
    "default_data_dir",
    "load_settings",
    "mask_credentials",
]

ENV_VARS: dict[str, str] = {
    "PLUGIN_PROVIDER": "provider.type",
    "PLUGIN_REGION": "provider.region",
    "PLUGIN_PROFILE": "provider.profile",
    "PLUGIN_TIMEOUT": "sdk.timeout",
    "PLUGIN_USER": "sdk.user",
    "PLUGIN_LOG_LEVEL": "logging.level",
    "PLUGIN_LOG_FILE": "logging.file",
    "PLUGIN_LOG_FORMAT": "logging.format",
    "PLUGIN_API_HOST": "api.host",
    "PLUGIN_API_PORT": "api.port",
    "PLUGIN_API_WORKERS": "api.workers",
    "PLUGIN_API_URL": "api.url",
    "PLUGIN_API_KEY": "api.key",
    "PLUGIN_API_VERIFY": "api.verify",
    "PLUGIN_API_CA_BUNDLE": "api.ca_bundle",
    "PLUGIN_API_CLIENT_CERT": "api.client_cert",
    "PLUGIN_API_CLIENT_KEY": "api.client_key",
    "PLUGIN_STORAGE_TYPE": "storage.type",
    "PLUGIN_STORAGE_PATH": "storage.path",
    "PLUGIN_STORAGE_URL": "storage.url",
    "PLUGIN_SCHEDULER": "scheduler.type",
    "PLUGIN_TEMPLATES_DIR": "templates.dir",
    "PLUGIN_MCP_PROFILE": "mcp.profile",
}
"""Environment variable -> dotted configuration key."""

#: flat keys the SDK's config dict accepts (spec: provider, region, timeout, log_level).
_FLAT_ALIASES = {
    "provider": "provider.type",
    "region": "provider.region",
    "profile": "provider.profile",
    "timeout": "sdk.timeout",
    "log_level": "logging.level",
    "storage_path": "storage.path",
    "scheduler": "scheduler.type",
}


def default_data_dir() -> Path:
    """Per-user data directory holding the default SQLite store (and PostgreSQL's seal key): platformdirs'
    user data directory for `pluginsdk` — `$XDG_DATA_HOME/pluginsdk` or `~/.local/share/pluginsdk` on Linux,
    `~/Library/Application Support/pluginsdk` on macOS, `%LOCALAPPDATA%\\pluginsdk` on Windows.

    Earlier releases used the Linux path everywhere; where that directory exists and platformdirs' does not
    (macOS, Windows), it stays in use, so an existing store and its key are not left behind. platformdirs is
    imported only here, when no `storage.path` is set (it costs a CLI call a few ms of imports).
    """
    import platformdirs

    current = Path(platformdirs.user_data_dir("pluginsdk", appauthor=False))
    earlier = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "pluginsdk"
    if earlier != current and earlier.is_dir() and not current.exists():
        return earlier
    return current


class _Secret:
    """Marker of a configuration field whose value is a secret (`Annotated[str | None, SECRET]`)."""

    def __repr__(self) -> str:
        return "SECRET"


SECRET = _Secret()
"""Put in a field's `Annotated[...]`: the value is shown as `***` wherever the configuration is shown."""


class _Group(pydantic.BaseModel):
    model_config = ConfigDict(extra="allow", validate_by_alias=True, validate_by_name=True, defer_build=True)

    open_groups: ClassVar[bool] = False
    """Whether a key that is not a field may hold a sub-group (a mapping): the provider drivers' own
    groups (`provider.local`, `provider.aws`, a third party's). Any other unknown key is an error."""
    retired: ClassVar[dict[str, str]] = {}
    """Keys that once meant something -> the error that says what replaces them."""

    @classmethod
    def sub_group(cls, name: str) -> type[_Group] | None:
        """The model of the open sub-group `name`; None when no model describes it (its keys stay open)."""
        return None

    def __repr_args__(self) -> Any:
        """Reprs (logs, tracebacks) show what `Settings.redacted` shows: no secret, no credential."""
        shown = _masked(type(self), self.model_dump(mode="json", by_alias=True))
        return list(shown.items())


class LocalProviderSettings(_Group):
    """`provider.local`: the simulated provider (backends/local/providers/local.py)."""

    boot_delay: float = Field(2.0, ge=0)
    terminate_delay: float = Field(1.0, ge=0)
    failure_rate: float = Field(0.0, ge=0, le=1)
    terminate_failure_rate: float = Field(0.0, ge=0, le=1)
    capacity: int = Field(1000, ge=0)
    seed: str | int | None = None
    region: str | None = None
    profile: str | None = None
    run_user_data: bool = False
    """For testing: a booted machine runs its template's `user_data` as a local process (docs/schedulers.md)."""
    user_data_log_dir: str | None = None
    """Where those processes write (default: discarded)."""
    capacity_errors: list[str] = []
    """Instance types (or `type@subnet`) whose launches are refused for capacity (docs/providers.md)."""
    capacity_failure_rate: float = Field(0.0, ge=0, le=1)
    """Share of launch calls refused for capacity."""
    reclaim_after: float | None = Field(None, ge=0)
    """Seconds after boot when the simulated cloud takes a running machine back (a spot interruption)."""
    reclaim_rate: float = Field(1.0, ge=0, le=1)
    """Share of machines it takes back."""
    ready_rate: float = Field(1.0, ge=0, le=1)
    """Share of booted machines that report ready by themselves (0: none ever does; docs/providers.md)."""


class AwsProviderSettings(_Group):
    """`provider.aws`: the AWS driver (docs/aws.md)."""

    retired: ClassVar[dict[str, str]] = dict.fromkeys(
        ("retry_base_delay", "retry_max_delay"),
        "is gone: botocore's retry mode sets the backoff (provider.aws.retry_mode: standard or adaptive; "
        "provider.aws.max_attempts)",
    )

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    default_instance_type: str | None = None
    fleet_role: str | None = None
    availability_zones: list[str] | str | None = None
    retry_mode: Literal["standard", "adaptive", "legacy"] | None = None
    max_attempts: int = Field(5, ge=1, le=100)
    timeout: float = Field(30.0, gt=0)
    interruption_queue_url: str | None = None
    """SQS queue receiving EventBridge's EC2 interruption events (docs/providers.md)."""
    interruption_wait_seconds: int = Field(0, ge=0, le=20)
    """Long-poll seconds of each receive from it (0: off)."""
    interruption_keep_stopped: bool = False
    """Keep an instance its interruption stopped or hibernated (shown `stopped`, listed for return) instead of
    terminating it (docs/providers.md#interruptions-through-sqs)."""


_PROVIDER_GROUPS: dict[str, type[_Group]] = {"local": LocalProviderSettings, "aws": AwsProviderSettings}

SettingsGroup = _Group
"""Base of a configuration group's model: a third party's provider driver names its own as the class
attribute `settings_model` (fields annotated `Annotated[..., SECRET]` are masked when shown)."""
_GroupModel = type[_Group]  # ProviderSettings' field `type` hides the builtin in its body


class CapacitySettings(_Group):
    """`provider.capacity`: how long an offering that failed for capacity is skipped (docs/providers.md)."""

    cooldown_seconds: float = Field(300.0, gt=0)
    """First cooldown after a capacity failure; it doubles on each failure in a row."""
    max_cooldown_seconds: float = Field(1800.0, gt=0)
    """Longest cooldown."""
    probe_seconds: float = Field(60.0, gt=0)
    """How long one half-open probe launch holds the offering before another probe may go."""


class QuotaSettings(_Group):
    """`provider.quotas`: limits checked when a request is made (docs/providers.md)."""

    max_active: dict[str, Annotated[int, Field(ge=0)]] = {}
    """Provider instance -> most machines it holds at once."""
    machines_per_user: int | None = Field(None, ge=1)
    """Most machines one user may request within `window_seconds`."""
    window_seconds: float = Field(3600.0, gt=0)
    retry_seconds: int = Field(60, ge=1)
    """Retry-After of a refusal by a limit on machines at once (machines free when they are returned)."""


_INSTANCES: dict[str, Any] = {"x-provider-instances": True}
"""Marks the field of named provider instances: each is shown masked by its driver's settings model."""
_INSTANCE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


class ProviderSettings(_Group):
    open_groups: ClassVar[bool] = True

    type: str = "local"
    """Provider driver used for new requests (local, aws): the implicit instance of that name."""
    region: str | None = None
    profile: str | None = None
    max_machines_per_request: int = Field(1000, ge=1)
    """Global cap on a request's machine count."""
    default: str | None = None
    """Provider instance a template that names none uses (default: `type`, the implicit instance)."""
    instances: dict[str, dict[str, Any]] = Field({}, json_schema_extra=_INSTANCES)
    """Named provider instances: name -> {type: driver, the driver's own settings} (docs/providers.md)."""
    capacity: CapacitySettings = Field(default_factory=CapacitySettings.model_construct)
    quotas: QuotaSettings = Field(default_factory=QuotaSettings.model_construct)

    @pydantic.field_validator("instances")
    @classmethod
    def _instances(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each instance names a driver installed here, and its settings are that driver's (unknown keys refused)."""
        for name, group in value.items():
            if not _INSTANCE_NAME.match(name):
                raise _wrong(name, name, "an instance name: lower-case letters, digits, '-' or '_'")
            kind = group.get("type")
            if not isinstance(kind, str):
                raise _wrong(f"{name}.type", kind, "the provider driver of this instance (local, aws, ...)")
            try:
                model = cls.sub_group(kind)
            except LookupError:
                expected = f"an installed provider driver ({', '.join(_driver_names())})"
                raise _wrong(f"{name}.type", kind, expected) from None
            if model is None:
                continue
            settings = {k: v for k, v in group.items() if k != "type"}
            fields = _inputs(model)
            for key, given in settings.items():
                if key not in fields:
                    raise _wrong(f"{name}.{key}", given, f"a key of provider.{kind}: {', '.join(fields)}")
            try:
                model.model_validate(settings)
            except pydantic.ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                raise _wrong(f"{name}.{where}", err.get("input"), err["msg"]) from None
        return value

    @pydantic.model_validator(mode="after")
    def _default_known(self) -> ProviderSettings:
        if self.default is not None and self.default not in self.instances and self.default != self.type:
            raise _wrong("default", self.default, f"a provider instance ({', '.join([self.type, *self.instances])})")
        return self

    def instance_names(self) -> list[str]:
        """Every configured provider instance: the implicit one (`type`) first, then the named ones."""
        return [self.type, *(n for n in self.instances if n != self.type)]

    def default_instance(self) -> str:
        return self.default or self.type

    @classmethod
    def sub_group(cls, name: str) -> _GroupModel | None:
        """A built-in driver's model, else the `settings_model` of the installed driver of that name (a third
        party's driver without one keeps its group open, and shown masked). A name no driver has is unknown."""
        if name in _PROVIDER_GROUPS:
            return _PROVIDER_GROUPS[name]
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group="pluginsdk.providers") if ep.name == name]
        if not found:
            raise LookupError(name)
        model = getattr(found[0].load(), "settings_model", None)
        return model if isinstance(model, type) and issubclass(model, _Group) else None


class HeldSettings(_Group):
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


_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")


class CorsSettings(_Group):
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
            if origin != "*" and not _ORIGIN.match(origin):
                raise ValueError(f"{origin[:200]!r} is not an origin: scheme://host[:port], no path, or *")
        return value

    @pydantic.model_validator(mode="after")
    def _no_credentials_to_anyone(self) -> CorsSettings:
        if self.allow_credentials and "*" in self.allow_origins:
            raise ValueError("allow_credentials with allow_origins '*' would hand credentials to any site")
        return self


class ApiSettings(_Group):
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


class StorageSettings(_Group):
    type: Literal["sqlite", "postgresql", "memory"] = "sqlite"
    path: str | None = None
    """SQLite file (default: <user data dir>/pluginsdk.db)."""
    url: str | None = None
    """Database URL, e.g. postgresql://user@127.0.0.1:5432/db (a password in it is masked when shown)."""
    seal_key_file: str | None = None
    """Owner-only file of the key that seals secrets in the store (default: beside the SQLite file)."""


class LoggingSettings(_Group):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING"
    file: str | None = None
    format: Literal["text", "json"] = "text"
    """`json`: one JSON object per line, each with the request id of the call that caused it."""


class SchedulerSettings(_Group):
    type: Literal["default", "hostfactory", "lsf"] = "default"
    grace_period: int = 300
    """HostFactory getReturnRequests gracePeriod (seconds)."""
    instance_types: dict[str, Any] = {}
    """Instance type -> {ncpus, memory_mb, ncores, arch} for HostFactory/LSF template attributes."""


class TemplateSettings(_Group):
    dir: str | None = None
    """Directory of *.json / *.yaml template files loaded beside the stored ones."""


class SdkSettings(_Group):
    timeout: float = Field(3600, gt=0)
    user: str = "administrator"
    """User the in-process SDK acts as."""
    reconcile_interval: float = Field(1.0, gt=0)
    """Seconds between background reconciliation passes in long-lived processes."""
    claim_seconds: float = Field(60.0, gt=0, le=3600)
    """Lease a process holds on a request while it calls the provider for it; a dead process's lease
    expires after this and another process takes the request over."""


class McpSettings(_Group):
    profile: str | None = None
    """Tool profile(s) `pluginsdk mcp serve` lists: provisioning (default), auth or all; comma-separated."""
    http: bool = True
    """`pluginsdk server start` also serves the MCP tools at /mcp (Streamable HTTP) and the OAuth endpoints."""
    public_url: str | None = Field(None, pattern=r"^https?://[^/?#\s]+(/[^?#\s]*)?$")
    """The server's base URL as clients reach it (`https://tools.example.org`): the OAuth issuer, and with
    `/mcp` the resource tokens are bound to. Default: the address the server answers on."""
    token_seconds: int = Field(900, ge=30, le=86400)
    """Lifetime of an access token this server issues for /mcp (never past the sign-in's own)."""
    allowed_origins: list[Annotated[str, Field(pattern=r"^https?://[^/?#\s]+$")]] = []
    """Web origins (`https://assistant.example.org`) whose pages may call /mcp from a browser, besides this
    server's own (`mcp.public_url`, else the address it answers on); a request with another `Origin` is
    refused 403 (MCP transport spec). A request without `Origin` (not from a browser) is not affected."""


def _flag(value: Any) -> Any:
    """`true`/`false`, also as text in any case; any other value is left for the strict check to refuse."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def _flag_or_blank(value: Any) -> Any:
    """As `_flag`, and empty text is `false`."""
    return False if isinstance(value, str) and not value.strip() else _flag(value)


def _number(value: Any) -> Any:
    """A number or numeric text, never a boolean (`true` is no count)."""
    if isinstance(value, bool):
        raise PydanticCustomError("number", "expected a number, not true or false")
    return value


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


def _texts(value: Any) -> Any:
    """A list of text, or one text of comma-separated items."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


Flag = Annotated[bool, Strict(), BeforeValidator(_flag)]
"""`true` or `false` (also as text): no other value, so a vague setting is an error rather than a guess."""
Whole = Annotated[int, BeforeValidator(_number)]
Number = Annotated[float, BeforeValidator(_number)]
Texts = Annotated[tuple[str, ...], BeforeValidator(_texts)]
OptionalText = Annotated[str | None, BeforeValidator(_blank_is_none)]
"""Text, where empty text is unset."""


def _wrong(key: str, value: Any, expected: str) -> PydanticCustomError:
    """A check across fields failed: `key` (relative to the model checked) is the wrong one, `expected` says why."""
    return PydanticCustomError("config", expected, {"key": key, "value": value})


class _AppGroup(_Group):
    """A group of `app`: keys in camelCase (docs/auth.md), a key given as null is unset (its default holds)."""

    model_config = ConfigDict(allow_inf_nan=False)

    @pydantic.model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, Mapping) else data


class PasswordHashingSettings(_AppGroup):
    """`app.authProvider.useManaged.passwordHashing`: argon2id's cost, and how many hashes run at once."""

    timeCost: Whole = Field(3, ge=1)
    memoryKib: Whole = Field(65536, ge=8)
    """At least 8 x `parallelism` (argon2's floor)."""
    parallelism: Whole = Field(4, ge=1)
    concurrency: Whole = Field(2, ge=1)
    """Password hashes computed at once in one process (each takes `memoryKib`)."""
    queue: Whole = Field(8, ge=0)
    """Sign-ins and password changes that may wait for a hashing slot; more are answered 429 at once."""

    @pydantic.model_validator(mode="after")
    def _argon2_floor(self) -> PasswordHashingSettings:
        if self.memoryKib < 8 * self.parallelism:
            raise _wrong("memoryKib", self.memoryKib, f"at least 8 x parallelism ({8 * self.parallelism})")
        return self


class SignInLimitsSettings(_AppGroup):
    """`app.authProvider.useManaged.signInLimits`: failed sign-ins (wrong password or TOTP code), counted in
    the store per account name and per client address, so every server on one store agrees."""

    accountFailures: Whole = Field(5, ge=1)
    clientFailures: Whole = Field(30, ge=1)
    failureWindowSeconds: Number = Field(900.0, ge=1)
    lockSeconds: Number = Field(300.0, ge=0.1)


class ManagedPoolSettings(_AppGroup):
    """`app.authProvider.useManaged`: the embedded user pool (users, sign-in, tokens)."""

    enabled: Flag = False
    useOidc: Flag = False
    """Federation flags reported to the web client; at most one, and only with `enabled`."""
    useSaml: Flag = False
    userPoolId: str = "pluginsdk-local"
    appClientId: str = "pluginsdk"
    """Reported by /api/amplify-config, and the tokens' audience."""
    identityPoolId: str = "undefined"
    userPoolEndpoint: str = ""
    """Reported by /api/amplify-config (default: the API URL)."""
    issuer: str = "pluginsdk"
    """The tokens' `iss`."""
    signingAlgorithm: Literal["EdDSA", "RS256"] = "EdDSA"
    tokenMinutes: Whole = Field(60, ge=1)
    """Lifetime of id and access tokens."""
    refreshTokenDays: Whole = Field(30, ge=1)
    """Lifetime of a session (its refresh token)."""
    temporaryPasswordDays: Whole = Field(7, ge=1)
    passwordMinLength: Whole = Field(12, ge=8)
    passwordHashing: PasswordHashingSettings = Field(default_factory=PasswordHashingSettings.model_construct)
    signInLimits: SignInLimitsSettings = Field(default_factory=SignInLimitsSettings.model_construct)

    @pydantic.model_validator(mode="after")
    def _one_federation(self) -> ManagedPoolSettings:
        if self.useOidc and self.useSaml:
            raise _wrong("", True, "only one federation method may be active: useOidc or useSaml, not both")
        if (self.useOidc or self.useSaml) and not self.enabled:
            raise _wrong("", False, "useOidc/useSaml need useManaged.enabled true")
        return self


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ExternalIdpSettings(_AppGroup):
    """`app.authProvider.useExternalOAuthIdp`: tokens of an external OAuth IdP, verified against its key set."""

    enabled: Flag = False
    idpUrl: str = ""
    clientId: str = ""
    scope: str = "openid email profile"
    scopeMfa: str = ""
    tokenEndpoint: str = ""
    authorizationEndpoint: str = ""
    discoveryEndpoint: str = ""
    jwksUrl: str = ""
    """The IdP's key set: `https://`, plain `http://` only on loopback (default: the discovery document's)."""
    issuer: str = ""
    """Checked on every token (required)."""
    audience: str = ""
    """Checked on every token (default: `clientId`)."""
    userIdClaim: str = "sub"
    emailClaim: str = "email"
    mfaClaim: str = "amr"
    mfaValues: Texts = ("mfa", "otp", "hwk", "swk")
    """A token is MFA when `mfaClaim` holds one of these."""
    algorithms: Texts = ("RS256", "ES256", "EdDSA")
    """Accepted signing algorithms: asymmetric only (HS* and `none` are refused)."""
    jwksCacheSeconds: Number = Field(3600.0, ge=1)
    jwksMinRefreshSeconds: Number = Field(60.0, ge=0)
    """An unknown `kid` fetches the key set again at most this often."""
    httpTimeout: Number = Field(5.0, ge=0.1)
    clockSkewSeconds: Number = Field(60.0, ge=0, le=600)
    """Leeway on the `exp`, `iat` and `nbf` of the IdP's tokens (clocks of two machines never agree)."""
    clientSecret: Annotated[OptionalText, SECRET] = None
    """The secret of `clientId` for OIDC sign-in (`useManaged.useOidc`); unset: a public client (PKCE only)."""
    displayName: str = ""
    """The sign-in button's "Sign in with <displayName>" (default: the issuer's host name)."""

    @pydantic.model_validator(mode="after")
    def _verifiable(self) -> ExternalIdpSettings:
        """Enabled: with what verifying its tokens needs, asymmetric algorithms only."""
        if not self.enabled:
            return self
        return self.checked()

    def checked(self) -> ExternalIdpSettings:
        """What verifying the IdP's tokens needs is here (also for OIDC sign-in, enabled or not)."""
        if not self.issuer:
            raise _wrong("issuer", "", "a value (needed to verify the IdP's tokens)")
        if not (self.jwksUrl or self.discoveryEndpoint):
            raise _wrong("jwksUrl", "", "a value, or discoveryEndpoint (needed to verify the IdP's tokens)")
        if not (self.audience or self.clientId):
            raise _wrong("clientId", "", "the client id the IdP's tokens are issued to")
        for key in ("jwksUrl", "discoveryEndpoint", "authorizationEndpoint", "tokenEndpoint"):
            value = getattr(self, key)
            if value and not _web_url(value):
                raise _wrong(key, value, "an https:// URL (http:// only on loopback)")
        bad = [a for a in self.algorithms if a.startswith(("HS", "none"))]
        if bad:
            raise _wrong("algorithms", ",".join(bad), "asymmetric algorithms only (RS256, ES256, EdDSA, ...)")
        return self

    @property
    def name(self) -> str:
        """What the sign-in button calls the IdP."""
        return self.displayName or urlparse(self.issuer).hostname or self.issuer


def _web_url(value: str) -> bool:
    """An https:// URL, or http:// on loopback."""
    url = urlparse(value)
    return bool(url.hostname and (url.scheme == "https" or (url.scheme == "http" and url.hostname in _LOOPBACK)))


class SamlSettings(_AppGroup):
    """`app.authProvider.federation.saml`: this server as a SAML 2.0 service provider (`useManaged.useSaml`)."""

    idpMetadataFile: str = ""
    """The identity provider's SAML metadata (an XML file): its entity id, sign-in URL and signing certificate."""
    spBaseUrl: str = ""
    """This server's public URL: the assertion consumer service is `<spBaseUrl>/ui/sso/saml/acs`, the metadata
    `<spBaseUrl>/ui/sso/saml/metadata`."""
    spEntityId: str = ""
    """This service provider's entity id (default: the metadata URL)."""
    userIdAttribute: str = ""
    """The attribute holding the user id (default: the assertion's NameID)."""
    emailAttribute: str = "email"
    displayName: str = ""
    """The sign-in button's "Sign in with <displayName>" (default: "SAML")."""

    @property
    def name(self) -> str:
        return self.displayName or "SAML"

    @property
    def entity_id(self) -> str:
        return self.spEntityId or f"{self.spBaseUrl.rstrip('/')}/ui/sso/saml/metadata"


class FederationSettings(_AppGroup):
    """`app.authProvider.federation`: who a federated sign-in (OIDC or SAML) admits, and with which roles."""

    rolesClaim: str = "groups"
    """The ID token claim (OIDC) or assertion attribute (SAML) listing the user's groups."""
    roleMapping: dict[str, Texts] = {}
    """Group -> role names. At each sign-in the user's roles become those of their groups (empty mapping:
    roles are left as administrators set them)."""
    allowedEmailDomains: Texts = ()
    """When set, only users whose verified e-mail address is in one of these domains may sign in."""
    allowedIssuers: Texts = ()
    """When set, only these issuers (OIDC `iss`, SAML IdP entity id) may sign users in."""
    saml: SamlSettings = Field(default_factory=SamlSettings.model_construct)


class AuthorizerOptionsSettings(_AppGroup):
    """`app.authProvider.authorizerOptions`."""

    defaultUserRoleName: OptionalText = None
    """Role a user with no (existing) roles is evaluated as holding; unset: such a user is refused."""


class SmtpSettings(_AppGroup):
    """`app.authProvider.smtp`: the mail server temporary passwords are sent through."""

    host: str = ""
    """Without it, a temporary password is returned once to the administrator instead."""
    port: Whole = Field(587, ge=1, le=65535)
    username: OptionalText = None
    password: Annotated[OptionalText, SECRET] = None
    startTls: Annotated[bool | None, Strict(), BeforeValidator(_flag)] = None
    """STARTTLS: unset lets the mail library decide from what the server offers."""
    useTls: Flag = False
    sender: str = Field("pluginsdk@localhost", alias="from")
    timeout: Number = Field(10.0, ge=0.1)

    @property
    def configured(self) -> bool:
        return bool(self.host)


def _seal_key(value: Any) -> Any:
    """`secretsKey`: 32 bytes, base64url-encoded (padding optional), or unset."""
    if value in (None, ""):
        return None
    if isinstance(value, str):
        try:
            if len(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))) == 32:
                return value
        except ValueError:
            pass
    raise _wrong("", "***", "32 bytes, base64url-encoded")


class AuthProviderSettings(_AppGroup):
    """`app.authProvider`: who callers are and who may do what (docs/auth.md). At most one identity provider
    mode is on: the managed user pool, an external OAuth IdP, or neither (API keys and in-process calls)."""

    useManaged: ManagedPoolSettings = Field(default_factory=ManagedPoolSettings.model_construct)
    useExternalOAuthIdp: ExternalIdpSettings = Field(default_factory=ExternalIdpSettings.model_construct)
    authorizerOptions: AuthorizerOptionsSettings = Field(default_factory=AuthorizerOptionsSettings.model_construct)
    adminUserId: str = "administrator"
    """User that receives the `admin` role; the in-process SDK acts as this user unless `sdk.user` says otherwise."""
    disableAuthorization: Annotated[bool, Strict(), BeforeValidator(_flag_or_blank)] = False
    """`true` runs with no authorization at all: every caller is the admin user, every call is allowed."""
    secretsKey: Annotated[str | None, SECRET, BeforeValidator(_seal_key)] = None
    """The key that seals secrets in the store, given here instead of in a key file."""
    smtp: SmtpSettings = Field(default_factory=SmtpSettings.model_construct)
    federation: FederationSettings = Field(default_factory=FederationSettings.model_construct)

    @pydantic.model_validator(mode="after")
    def _one_mode(self) -> AuthProviderSettings:
        managed = self.useManaged
        if managed.enabled and self.useExternalOAuthIdp.enabled and not managed.useOidc:
            raise _wrong(
                "useExternalOAuthIdp.enabled",
                True,
                "useExternalOAuthIdp cannot be combined with useManaged, except as useManaged.useOidc's provider",
            )
        if managed.useOidc:
            try:
                self.useExternalOAuthIdp.checked()
            except PydanticCustomError as err:
                key = f"useExternalOAuthIdp.{(err.context or {}).get('key', '')}".rstrip(".")
                raise _wrong(key, (err.context or {}).get("value"), f"{err.message()} for useManaged.useOidc") from None
        saml = self.federation.saml
        if managed.useSaml:
            for key in ("idpMetadataFile", "spBaseUrl"):
                if not getattr(saml, key):
                    raise _wrong(f"federation.saml.{key}", "", "a value (needed by useManaged.useSaml)")
            if not _web_url(saml.spBaseUrl):
                raise _wrong("federation.saml.spBaseUrl", saml.spBaseUrl, "an https:// URL (http:// only on loopback)")
        return self

    @property
    def mode(self) -> Literal["managed", "external", "none"]:
        """The identity provider mode that is on."""
        if self.useManaged.enabled:
            return "managed"
        return "external" if self.useExternalOAuthIdp.enabled else "none"

    def seal_key(self) -> bytes | None:
        """`secretsKey` decoded (checked at load)."""
        key = self.secretsKey
        return None if key is None else base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))


class AuditSettings(_AppGroup):
    """`app.audit`."""

    decisionSampleRate: Number = Field(0.0, ge=0, le=1)
    """Share of the decisions asked through the decision point that are recorded (0: none, 1: all)."""


class AppSettings(_AppGroup):
    """`app`: the auth service's settings (docs/auth.md). Its models are built only when a configuration
    gives `app`: otherwise its defaults are taken as they are."""

    authProvider: AuthProviderSettings = Field(default_factory=AuthProviderSettings.model_construct)
    audit: AuditSettings = Field(default_factory=AuditSettings.model_construct)
    region: str | None = None
    """Reported by /api/amplify-config (default: `provider.region`, else `local`)."""
    apiUrl: str | None = None
    """Reported by /api/amplify-config (default: `api.url`, else `http://<api.host>:<api.port>/`)."""
    contentSecurityPolicy: str = ""
    bannerHtmlMessage: str = ""
    featuresEnabled: Texts = ()
    """Feature flags of /secure-config; the identity provider mode's flag is added."""
    locationServiceApiUrl: str = ""
    webDeployedUrl: str = ""


_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""A node name Slurm and a host name both accept."""


class SlurmNodeSet(_Group):
    nodes: str
    """Node names as a Slurm hostlist expression (`cloud-cpu-[1-100]`)."""
    template: str
    """Template each of these nodes is launched from."""
    partition: str | None = None
    """Partition `pluginsdk slurm config` puts the nodes in (default: the template id)."""


class SlurmSettings(_Group):
    nodesets: list[SlurmNodeSet] = []
    """Which template each cloud node is launched from (docs/schedulers.md, "Slurm")."""
    all_or_nothing: bool = False
    """Per job: a job that cannot get all its nodes gives back what it got and its nodes go down (true), or
    keeps what came up (false: best effort, one launch per template for the whole resume)."""
    spool_dir: str | None = None
    """Where the power-saving programs leave their work for the worker (default: <user data dir>/slurm)."""
    log_file: str | None = None
    """The programs' and the worker's log (Slurm keeps none of their output; default: <spool_dir>/slurm.log)."""
    scontrol: str = "/usr/bin/scontrol"
    """The `scontrol` the worker runs to mark nodes down and set their addresses."""
    resume_timeout: int = Field(600, ge=10)
    """Seconds a resumed node has to come up and register (Slurm's ResumeTimeout; `slurm config` prints it)."""
    suspend_time: int = Field(300, ge=1)
    """Idle seconds before Slurm suspends a node (SuspendTime, printed by `slurm config`)."""
    reconcile_interval: float = Field(60.0, ge=0)
    """Seconds between the Slurm reconcile passes a long-lived process (the REST server) runs on the host of
    the controller, when node sets are configured; 0: only `pluginsdk slurm reconcile` runs it."""
    set_node_address: bool = False
    """Tell the controller each node's address (`scontrol update nodeaddr= nodehostname=`) once its machine
    runs; off: rely on `SlurmctldParameters=cloud_reg_addrs` (the address the node registers from)."""

    @pydantic.model_validator(mode="after")
    def _nodesets_readable(self) -> SlurmSettings:
        """Each node set's hostlist reads, names host-like nodes, and shares none with another set: a node on two
        `NodeName` lines stops slurmctld (`fatal: Duplicated NodeName`), and a typo found only when Slurm asks for
        the node leaves its job waiting out ResumeTimeout."""
        if not self.nodesets:
            return self
        try:
            import hostlist
        except ImportError:
            expected = "python-hostlist installed to read node sets: pip install 'pluginsdk[slurm]'"
            raise _wrong("nodesets", None, expected) from None
        owner: dict[str, int] = {}
        for i, nodeset in enumerate(self.nodesets):
            key = f"nodesets.{i}.nodes"
            try:
                names = hostlist.expand_hostlist(nodeset.nodes, allow_duplicates=True)
            except hostlist.BadHostlist as exc:
                raise _wrong(key, nodeset.nodes, f"a Slurm hostlist expression such as cloud-[1-100] ({exc})") from None
            if not names:
                raise _wrong(key, nodeset.nodes, "at least one node name")
            mine: set[str] = set()
            for name in names:
                if not _NODE_NAME.match(name):
                    raise _wrong(key, nodeset.nodes, f"node names of letters, digits, '.', '-' or '_' (not {name!r})")
                if name in mine:
                    raise _wrong(key, nodeset.nodes, f"each node once: {name} is listed twice")
                mine.add(name)
                first = owner.setdefault(name, i)
                if first != i:
                    where = f"slurm.nodesets.{first}.nodes ({self.nodesets[first].nodes})"
                    raise _wrong(key, nodeset.nodes, f"node sets that do not overlap: {name} is also in {where}")
        return self


class Settings(pydantic.BaseModel):
    """The effective configuration, validated. `sources` maps dotted keys to their origin.

    `load_settings` validates each group that was given on its own and takes the defaults of the others
    as they are (they are valid by construction), so a CLI call builds the validators of only the one or
    two groups it configures, not of all nine models.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    templates: TemplateSettings = Field(default_factory=TemplateSettings)
    sdk: SdkSettings = Field(default_factory=SdkSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)
    app: AppSettings = Field(default_factory=AppSettings.model_construct)
    """The auth service's settings (`app.authProvider`, `app.audit`, ...)."""
    sources: dict[str, str] = Field({}, exclude=True)
    config_file: str | None = Field(None, exclude=True)
    """The configuration file read (`config_path`, else PLUGIN_CONFIG), as an absolute path; None without one.
    What a process this one starts (the Slurm worker) or an operator must name to get the same settings."""

    def __repr_args__(self) -> Any:
        return list(self.redacted().items())

    def source_of(self, key: str) -> str:
        return self.sources.get(key, "default")

    def group(self, dotted: str) -> dict[str, Any]:
        """A free-form sub-group (e.g. `provider.local`) as a dict; {} when absent."""
        node: Any = self
        for part in dotted.split("."):
            if isinstance(node, pydantic.BaseModel):
                node = node.__dict__.get(part, (node.__pydantic_extra__ or {}).get(part))
            else:
                node = node.get(part) if isinstance(node, dict) else None
        return dict(node) if isinstance(node, dict) else {}

    @property
    def storage_target(self) -> str:
        """The SQLite path or database URL the store opens."""
        if self.storage.url:
            return self.storage.url
        if self.storage.type == "memory":
            return ":memory:"
        return self.storage.path or str(default_data_dir() / "pluginsdk.db")

    def redacted(self) -> dict[str, Any]:
        """The configuration for display: every field the model marks SECRET is `***`, a group no model
        describes (a third party's driver without a settings model) has every value `***`, and the
        credentials in every other text (URL passwords, DSN `password=`) are masked."""
        data = self.model_dump(mode="json", by_alias=True)
        shown: dict[str, Any] = _masked(Settings, data)
        return shown


_CREDENTIALS = (
    re.compile(r"(?P<keep>[A-Za-z][A-Za-z0-9+.\-]*://[^:@/\s?#]*:)[^@\s]*(?=@)"),  # scheme://user:PASSWORD@
    re.compile(r"(?i)(?P<keep>\b(?:password|passwd|pwd|sslpassword)\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&;]*)"),
)
"""A URL's userinfo password, and a DSN's or query string's `password=` part (libpq's keywords)."""


def mask_credentials(text: str) -> str:
    """`text` with the passwords of URLs (`scheme://user:***@host`) and DSNs (`password=***`) masked."""
    for pattern in _CREDENTIALS:
        text = pattern.sub(lambda m: m.group("keep") + "***", text)
    return text


def _masked(model: type[pydantic.BaseModel] | None, node: Any) -> Any:
    """`node` (a value of `model`, or of no model when None) as shown: see `Settings.redacted`."""
    if isinstance(node, str):
        return mask_credentials(node)
    if isinstance(node, list):
        return [_masked(None, v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    fields = _inputs(model) if model is not None else {}
    for key, value in node.items():
        field = fields.get(key)
        if field is not None:
            out[key] = _masked_field(field, value)
        elif model is not None and issubclass(model, _Group) and model.open_groups and isinstance(value, dict):
            out[key] = _masked_open(model, key, value)
        else:
            out[key] = _masked(None, value)
    return out


def _masked_open(model: type[_Group], key: str, value: dict[str, Any]) -> dict[str, Any]:
    try:
        sub = model.sub_group(key)
    except LookupError:
        sub = None
    if sub is None:  # nothing says which of its values are secret: none is shown
        return {k: "***" if v not in (None, "") else v for k, v in value.items()}
    shown: dict[str, Any] = _masked(sub, value)
    return shown


def _masked_field(field: Any, value: Any) -> Any:
    """A field's value as shown: a SECRET one as `***`, named provider instances by their drivers' models."""
    if SECRET in field.metadata and value not in (None, ""):
        return "***"
    if field.json_schema_extra == _INSTANCES and isinstance(value, dict):
        return {n: _masked_instance(g) for n, g in value.items()}
    return _masked(_model_of(field), value)


def _masked_instance(group: Any) -> Any:
    """A provider instance as shown: its driver's settings masked by that driver's model."""
    if not isinstance(group, dict):
        return _masked(None, group)
    shown = _masked_open(ProviderSettings, str(group.get("type")), {k: v for k, v in group.items() if k != "type"})
    return {"type": group.get("type"), **shown}


def _inputs(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """A model's fields by the name a configuration gives them (the alias, when it has one)."""
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _model_of(field: Any) -> type[_Group] | None:
    """The group model a field holds (`SmtpSettings | None` -> SmtpSettings), else None."""
    annotation = field.annotation
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, _Group):
            return candidate
    return None


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            node[p] = nxt
        node = nxt
    node[parts[-1]] = value


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and k != "app":
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _read_file(path: Path) -> dict[str, Any]:
    from .files import InputTooLargeError, load_json, load_yaml, read_bounded

    try:
        text = read_bounded(path)
        data = (load_yaml(text, str(path)) or {}) if path.suffix.lower() in (".yaml", ".yml") else load_json(text)
    except OSError as exc:
        raise ConfigurationError(
            f"Cannot read configuration file {str(path)!r}: {exc.strerror}.", key="config_path", source=str(path)
        ) from exc
    except InputTooLargeError as exc:
        raise ConfigurationError(
            f"Configuration file {str(path)!r} is refused: {exc} (docs/input.md).",
            key="config_path",
            source=str(path),
        ) from None
    except (ValueError, ImportError) as exc:
        raise ConfigurationError(
            f"Configuration file {str(path)!r} is not valid {path.suffix.lstrip('.').upper() or 'JSON'}: {exc}",
            key="config_path",
            source=str(path),
        ) from exc
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"Configuration file {str(path)!r} must hold an object of groups.", key="config_path", source=str(path)
        )
    return data


def _normalise(data: Mapping[str, Any]) -> dict[str, Any]:
    """Accept flat SDK keys (provider='aws', region=..., timeout=...) beside groups."""
    tree: dict[str, Any] = {}
    for k, v in data.items():
        if k in _FLAT_ALIASES and not isinstance(v, Mapping):
            _set(tree, _FLAT_ALIASES[k], v)
        elif isinstance(v, Mapping):
            for fk, fv in _flatten(v, f"{k}.").items():
                _set(tree, fk, fv)
        else:
            tree[k] = v
    return tree


def load_settings(
    *,
    config: Mapping[str, Any] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the layers and validate.

    `overrides` are dotted keys from command-line arguments (highest);
    `environ` defaults to `os.environ`; `config_path` falls back to
    `PLUGIN_CONFIG`. A bad value raises ConfigurationError naming key and source.
    """
    env = os.environ if environ is None else environ
    layers: list[tuple[str, dict[str, Any]]] = []
    path = config_path or env.get("PLUGIN_CONFIG")
    if path:
        layers.append((f"file {os.fspath(path)}", _normalise(_read_file(Path(path)))))
    if config:
        layers.append(("config dict", _normalise(config)))
    env_tree: dict[str, Any] = {}
    env_sources: dict[str, str] = {}
    for var, key in ENV_VARS.items():
        if env.get(var) not in (None, ""):
            _set(env_tree, key, env[var])
            env_sources[key] = f"environment {var}"
    layers.append(("environment", env_tree))
    if overrides:
        arg_tree: dict[str, Any] = {}
        for key, value in overrides.items():
            if value is not None:
                _set(arg_tree, key, value)
        layers.append(("argument", arg_tree))

    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for label, tree in layers:
        for key, value in _flatten(tree).items():
            _set(merged, key, value)
            sources[key] = env_sources.get(key, label) if label == "environment" else label
    settings = _validate(merged, sources)
    settings.sources = sources
    settings.config_file = os.path.abspath(path) if path else None
    return settings


def _validate(merged: dict[str, Any], sources: Mapping[str, str]) -> Settings:
    """Settings from the merged tree: given groups validated one by one, absent ones at their defaults."""
    data = dict(merged)
    values: dict[str, Any] = {}
    for name, info in Settings.model_fields.items():
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, _Group)):
            continue
        raw = data.pop(name, None)
        if isinstance(raw, Mapping):
            raw = _checked(name, model, raw, sources)
        try:
            values[name] = model.model_construct() if raw is None else model.model_validate(raw)
        except pydantic.ValidationError as exc:
            raise _invalid(exc, (name,), sources) from None
    for key in data:
        groups = [k for k in Settings.model_fields if k not in ("sources", "config_file")]
        raise _unknown(key, [*groups, *_FLAT_ALIASES], sources)
    return Settings.model_construct(**values)


def _checked(prefix: str, model: type[_Group], raw: Mapping[str, Any], sources: Mapping[str, str]) -> dict[str, Any]:
    """`raw` with every key checked against `model`, at every level: an unknown key raises (naming the
    closest valid one), a retired one raises with what replaces it, and an open sub-group (a provider
    driver's) is validated by its own model."""
    fields = _inputs(model)
    for key, value in raw.items():
        dotted = f"{prefix}.{key}"
        if key in model.retired:
            source = sources.get(dotted, "default")
            raise ConfigurationError(
                f"Configuration key {dotted!r} (from {source}) {model.retired[key]}.",
                key=dotted,
                source=source,
                details={"field": dotted, "expected": None},
            )
        field = fields.get(key)
        if field is not None:
            sub = _model_of(field)
            if sub is not None and isinstance(value, Mapping):
                _checked(dotted, sub, value, sources)
            continue
        if model.open_groups and isinstance(value, Mapping):
            try:
                sub = model.sub_group(key)
            except LookupError:
                raise _unknown(dotted, [*(f"{prefix}.{k}" for k in fields), *_open_names(prefix)], sources) from None
            if sub is not None:
                _checked(dotted, sub, value, sources)
                try:
                    sub.model_validate(value)
                except pydantic.ValidationError as exc:
                    raise _invalid(exc, (*prefix.split("."), key), sources) from None
            continue
        raise _unknown(dotted, [f"{prefix}.{k}" for k in fields], sources)
    return dict(raw)


def _open_names(prefix: str) -> list[str]:
    """The sub-groups an open group may hold (the provider drivers installed), for an unknown key's hint."""
    return [f"{prefix}.{n}" for n in _driver_names()]


def _driver_names() -> list[str]:
    """The provider drivers installed: the built-ins and the `pluginsdk.providers` entry points."""
    from importlib.metadata import entry_points

    return sorted({*_PROVIDER_GROUPS, *(ep.name for ep in entry_points(group="pluginsdk.providers"))})


def _unknown(key: str, valid: list[str], sources: Mapping[str, str]) -> ConfigurationError:
    """The ConfigurationError of an unknown key: where it was given, and the valid key it most resembles."""
    import difflib  # only on this error path: the CLI's cold start never pays for it

    source = _source(key, sources)
    leaf = key.rpartition(".")[2]
    by_leaf = {v.rpartition(".")[2]: v for v in valid}  # compared within the group: its prefix is no likeness
    close = [by_leaf[m] for m in difflib.get_close_matches(leaf, list(by_leaf), n=1, cutoff=0.6)]
    hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(sorted(valid))}."
    return ConfigurationError(
        f"Unknown configuration key {key!r} (from {source}){hint}",
        key=key,
        source=source,
        details={"field": key, "expected": close[0] if close else sorted(valid)},
    )


def _source(key: str, sources: Mapping[str, str]) -> str:
    """Where `key` was given: its own source, else that of a key inside it (an unknown key holding a mapping),
    else that of the group holding it (`app` is one value of its layer)."""
    if key in sources:
        return sources[key]
    inside = next((source for k, source in sources.items() if k.startswith(key + ".")), None)
    if inside is not None:
        return inside
    parent = key.rpartition(".")[0]
    return _source(parent, sources) if parent else "default"


def _invalid(
    exc: pydantic.ValidationError | None,
    prefix: tuple[str, ...],
    sources: Mapping[str, str],
    value: Any = None,
    expected: str = "",
) -> ConfigurationError:
    """The ConfigurationError of the first wrong value, naming its dotted key and where it came from."""
    if exc is not None:
        err = exc.errors()[0]
        prefix, value, expected = (*prefix, *(str(p) for p in err["loc"])), err.get("input"), err["msg"]
        named = (err.get("ctx") or {}).get("key")  # a check across fields names the key it refuses (`_wrong`)
        if named is not None:
            prefix, value = (*prefix, *(p for p in str(named).split(".") if p)), err["ctx"].get("value")
    key = ".".join(prefix)
    source = _source(key, sources)
    return ConfigurationError(
        f"Invalid configuration value for {key!r} (from {source}): {expected}.",
        key=key,
        source=source,
        details={"field": key, "value": _safe_value(key, value), "expected": expected},
    )


def _safe_value(key: str, value: Any) -> Any:
    """A wrong value as an error may show it: `***` for a field the model marks SECRET, credentials masked."""
    if _is_secret(key):
        return "***"
    shown = value if isinstance(value, str | int | float | bool) or value is None else str(value)
    return mask_credentials(shown) if isinstance(shown, str) else shown


def _is_secret(dotted: str) -> bool:
    """Whether the model marks the field at `dotted` SECRET (a key of a group no model describes counts as one)."""
    model: type[pydantic.BaseModel] | None = Settings
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        field = _inputs(model).get(part) if model is not None else None
        if field is not None:
            if SECRET in field.metadata:
                return True
            model = _model_of(field)
            continue
        if model is not None and issubclass(model, _Group) and model.open_groups and i < len(parts) - 1:
            try:
                model = model.sub_group(part)
            except LookupError:
                model = None
            if model is None:
                return True
            continue
        return False
    return False
