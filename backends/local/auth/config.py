"""The auth service's configuration, read from `settings.app` (keys documented in docs/auth.md).

Exactly one identity provider mode is active: the managed user pool
(`app.authProvider.useManaged.enabled`), an external OAuth IdP
(`app.authProvider.useExternalOAuthIdp.enabled`), or neither (API keys and
in-process calls only). Both at once, or OIDC and SAML federation at once, is
a ConfigurationError naming the keys.

The records are NamedTuples rather than frozen dataclasses: a dataclass compiles its methods when the
module is imported (~2 ms a class), and every CLI call starts the auth service. No postponed
annotations here: NamedTuple would turn each string annotation into a ForwardRef and compile it.
"""

import base64
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import urlparse

from pluginsdk.config import Settings
from pluginsdk.errors import ConfigurationError

__all__ = ["AuthConfig", "ExternalIdpConfig", "ManagedPoolConfig", "SignInLimits", "SmtpConfig", "load_auth_config"]

_BASE = "app.authProvider"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class SignInLimits(NamedTuple):
    """`useManaged.signInLimits`: failed sign-ins (wrong password or TOTP code) counted in the store per account
    name and per client address, so every server on one store agrees (docs/auth.md, "Sign-in limits")."""

    account_failures: int = 5
    client_failures: int = 30
    window_seconds: float = 900.0
    lock_seconds: float = 300.0


class ManagedPoolConfig(NamedTuple):
    enabled: bool = False
    use_oidc: bool = False
    use_saml: bool = False
    user_pool_id: str = "pluginsdk-local"
    app_client_id: str = "pluginsdk"
    identity_pool_id: str = "undefined"
    endpoint: str = ""
    issuer: str = "pluginsdk"
    signing_algorithm: str = "EdDSA"
    id_token_seconds: int = 3600
    refresh_token_seconds: int = 30 * 86400
    temporary_password_days: int = 7
    password_min_length: int = 12
    argon2_time_cost: int = 3
    argon2_memory_kib: int = 65536
    argon2_parallelism: int = 4
    hashing_concurrency: int = 2
    """Password hashes computed at once in this process (each takes `argon2_memory_kib`)."""
    hashing_queue: int = 8
    """Sign-ins and password changes that may wait for a hashing slot; more are answered 429 at once."""
    limits: SignInLimits = SignInLimits()


class ExternalIdpConfig(NamedTuple):
    enabled: bool = False
    idp_url: str = ""
    client_id: str = ""
    scope: str = "openid email profile"
    scope_mfa: str = ""
    token_endpoint: str = ""
    authorization_endpoint: str = ""
    discovery_endpoint: str = ""
    jwks_url: str = ""
    issuer: str = ""
    audience: str = ""
    user_id_claim: str = "sub"
    email_claim: str = "email"
    mfa_claim: str = "amr"
    mfa_values: tuple[str, ...] = ("mfa", "otp", "hwk", "swk")
    algorithms: tuple[str, ...] = ("RS256", "ES256", "EdDSA")
    jwks_cache_seconds: float = 3600.0
    jwks_min_refresh_seconds: float = 60.0
    http_timeout: float = 5.0


class SmtpConfig(NamedTuple):
    host: str = ""
    port: int = 587
    username: str | None = None
    password: str | None = None
    start_tls: bool | None = None
    use_tls: bool = False
    sender: str = "pluginsdk@localhost"
    timeout: float = 10.0

    @property
    def configured(self) -> bool:
        return bool(self.host)

    def __repr__(self) -> str:
        return _masked(self, "password")


class AuthConfig(NamedTuple):
    managed: ManagedPoolConfig = ManagedPoolConfig()
    external: ExternalIdpConfig = ExternalIdpConfig()
    default_user_role_name: str | None = None
    admin_user_id: str = "administrator"
    smtp: SmtpConfig = SmtpConfig()
    secrets_key: bytes | None = None
    region: str = "local"
    api_url: str = ""
    content_security_policy: str = ""
    banner_html_message: str = ""
    features_enabled: tuple[str, ...] = ()
    location_service_api_url: str = ""
    web_deployed_url: str = ""

    def __repr__(self) -> str:
        return _masked(self, "secrets_key")

    @property
    def mode(self) -> str:
        """managed, external or none."""
        if self.managed.enabled:
            return "managed"
        if self.external.enabled:
            return "external"
        return "none"


def _masked(record: Any, secret: str) -> str:
    """A record's repr with its secret shown as `***` (configs end up in logs and tracebacks)."""
    shown = ", ".join(f"{k}={'***' if k == secret and v else v!r}" for k, v in record._asdict().items())
    return f"{type(record).__name__}({shown})"


class _Reader:
    """Typed reads from a nested dict; a wrong type names the dotted key."""

    def __init__(self, data: Mapping[str, Any], prefix: str) -> None:
        self.data = data
        self.prefix = prefix

    def sub(self, key: str) -> "_Reader":
        value = self.data.get(key, {})
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise self._bad(key, value, "an object")
        return _Reader(value, f"{self.prefix}.{key}")

    def _bad(self, key: str, value: Any, expected: str) -> ConfigurationError:
        shown = "***" if any(w in key.lower() for w in ("password", "secret", "key")) else value
        return ConfigurationError(
            f"Invalid configuration value for '{self.prefix}.{key}': expected {expected}.",
            key=f"{self.prefix}.{key}",
            details={"field": f"{self.prefix}.{key}", "value": str(shown), "expected": expected},
        )

    def boolean(self, key: str, default: bool) -> bool:
        v = self.data.get(key, default)
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return v.lower() == "true"
        if not isinstance(v, bool):
            raise self._bad(key, v, "true or false")
        return v

    def opt_bool(self, key: str) -> bool | None:
        return None if self.data.get(key) is None else self.boolean(key, False)

    def text(self, key: str, default: str) -> str:
        v = self.data.get(key, default)
        if v is None:
            return default
        if not isinstance(v, str):
            raise self._bad(key, v, "text")
        return v

    def opt_text(self, key: str) -> str | None:
        v = self.data.get(key)
        if v is None or v == "":
            return None
        if not isinstance(v, str):
            raise self._bad(key, v, "text")
        return v

    def number(self, key: str, default: float, *, minimum: float = 0) -> float:
        v = self.data.get(key, default)
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                raise self._bad(key, v, "a number") from None
        if isinstance(v, bool) or not isinstance(v, int | float) or v < minimum:
            raise self._bad(key, v, f"a number >= {minimum}")
        return float(v)

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        v = self.number(key, default, minimum=minimum)
        if v != int(v):
            raise self._bad(key, v, "a whole number")
        return int(v)

    def texts(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        v = self.data.get(key, default)
        if isinstance(v, str):
            return tuple(p.strip() for p in v.split(",") if p.strip())
        if not isinstance(v, list | tuple) or not all(isinstance(x, str) for x in v):
            raise self._bad(key, v, "a list of text")
        return tuple(v)


def _check_url(reader: _Reader, key: str, url: str) -> None:
    parsed = urlparse(url)
    if parsed.scheme == "https" and parsed.hostname:
        return
    if parsed.scheme == "http" and parsed.hostname in _LOOPBACK:
        return
    raise reader._bad(key, url, "an https:// URL (http:// only on loopback)")


def load_auth_config(settings: Settings) -> AuthConfig:
    """Read and check `settings.app`; raises ConfigurationError naming the first wrong key."""
    app = _Reader(settings.app, "app")
    ap = app.sub("authProvider")
    managed = _managed_config(ap)
    external = _external_config(ap, managed)
    opts = ap.sub("authorizerOptions")
    smtp = _smtp_config(ap)
    secrets_key = _secrets_key(ap)
    return AuthConfig(
        managed=managed,
        external=external,
        default_user_role_name=opts.opt_text("defaultUserRoleName"),
        admin_user_id=ap.text("adminUserId", "administrator"),
        smtp=smtp,
        secrets_key=secrets_key,
        region=app.text("region", settings.provider.region or "local"),
        api_url=app.text("apiUrl", settings.api.url or f"http://{settings.api.host}:{settings.api.port}/"),
        content_security_policy=app.text("contentSecurityPolicy", ""),
        banner_html_message=app.text("bannerHtmlMessage", ""),
        features_enabled=app.texts("featuresEnabled", ()),
        location_service_api_url=app.text("locationServiceApiUrl", ""),
        web_deployed_url=app.text("webDeployedUrl", ""),
    )


def _managed_config(ap: _Reader) -> ManagedPoolConfig:
    m = ap.sub("useManaged")
    hashing = m.sub("passwordHashing")
    parallelism = hashing.integer("parallelism", 4, minimum=1)
    managed = ManagedPoolConfig(
        enabled=m.boolean("enabled", False),
        use_oidc=m.boolean("useOidc", False),
        use_saml=m.boolean("useSaml", False),
        user_pool_id=m.text("userPoolId", "pluginsdk-local"),
        app_client_id=m.text("appClientId", "pluginsdk"),
        identity_pool_id=m.text("identityPoolId", "undefined"),
        endpoint=m.text("userPoolEndpoint", ""),
        issuer=m.text("issuer", "pluginsdk"),
        signing_algorithm=m.text("signingAlgorithm", "EdDSA"),
        id_token_seconds=m.integer("tokenMinutes", 60, minimum=1) * 60,
        refresh_token_seconds=m.integer("refreshTokenDays", 30, minimum=1) * 86400,
        temporary_password_days=m.integer("temporaryPasswordDays", 7, minimum=1),
        password_min_length=m.integer("passwordMinLength", 12, minimum=8),
        argon2_time_cost=hashing.integer("timeCost", 3, minimum=1),
        argon2_memory_kib=hashing.integer("memoryKib", 65536, minimum=8 * parallelism),  # argon2's own floor
        argon2_parallelism=parallelism,
        hashing_concurrency=hashing.integer("concurrency", 2, minimum=1),
        hashing_queue=hashing.integer("queue", 8, minimum=0),
        limits=_sign_in_limits(m.sub("signInLimits")),
    )
    if managed.signing_algorithm not in ("EdDSA", "RS256"):
        raise m._bad("signingAlgorithm", managed.signing_algorithm, "EdDSA or RS256")
    if managed.use_oidc and managed.use_saml:
        raise ConfigurationError(
            f"Only one federation method may be active: set {_BASE}.useManaged.useOidc or "
            f"{_BASE}.useManaged.useSaml, not both.",
            key=f"{_BASE}.useManaged",
        )
    if (managed.use_oidc or managed.use_saml) and not managed.enabled:
        raise ConfigurationError(
            f"{_BASE}.useManaged.useOidc/useSaml need {_BASE}.useManaged.enabled true.", key=f"{_BASE}.useManaged"
        )
    return managed


def _sign_in_limits(r: _Reader) -> SignInLimits:
    return SignInLimits(
        account_failures=r.integer("accountFailures", 5, minimum=1),
        client_failures=r.integer("clientFailures", 30, minimum=1),
        window_seconds=r.number("failureWindowSeconds", 900.0, minimum=1),
        lock_seconds=r.number("lockSeconds", 300.0, minimum=0.1),
    )


def _external_config(ap: _Reader, managed: ManagedPoolConfig) -> ExternalIdpConfig:
    e = ap.sub("useExternalOAuthIdp")
    external = ExternalIdpConfig(
        enabled=e.boolean("enabled", False),
        idp_url=e.text("idpUrl", ""),
        client_id=e.text("clientId", ""),
        scope=e.text("scope", "openid email profile"),
        scope_mfa=e.text("scopeMfa", ""),
        token_endpoint=e.text("tokenEndpoint", ""),
        authorization_endpoint=e.text("authorizationEndpoint", ""),
        discovery_endpoint=e.text("discoveryEndpoint", ""),
        jwks_url=e.text("jwksUrl", ""),
        issuer=e.text("issuer", ""),
        audience=e.text("audience", "") or e.text("clientId", ""),
        user_id_claim=e.text("userIdClaim", "sub"),
        email_claim=e.text("emailClaim", "email"),
        mfa_claim=e.text("mfaClaim", "amr"),
        mfa_values=e.texts("mfaValues", ("mfa", "otp", "hwk", "swk")),
        algorithms=e.texts("algorithms", ("RS256", "ES256", "EdDSA")),
        jwks_cache_seconds=e.number("jwksCacheSeconds", 3600.0, minimum=1),
        jwks_min_refresh_seconds=e.number("jwksMinRefreshSeconds", 60.0),
        http_timeout=e.number("httpTimeout", 5.0, minimum=0.1),
    )
    if external.enabled:
        _check_external(e, external, managed)
    return external


def _check_external(e: _Reader, external: ExternalIdpConfig, managed: ManagedPoolConfig) -> None:
    """An enabled external IdP: alone, with what verifying its tokens needs, asymmetric algorithms only."""
    if managed.enabled:
        raise ConfigurationError(
            f"{_BASE}.useExternalOAuthIdp cannot be combined with {_BASE}.useManaged: enable only one.",
            key=f"{_BASE}.useExternalOAuthIdp.enabled",
        )
    for key, value in (("jwksUrl", external.jwks_url), ("issuer", external.issuer)):
        if not value:
            raise e._bad(key, value, "a value (needed to verify the IdP's tokens)")
    if not external.audience:
        raise e._bad("clientId", "", "the client id the IdP's tokens are issued to")
    _check_url(e, "jwksUrl", external.jwks_url)
    bad = [a for a in external.algorithms if a.startswith(("HS", "none")) or a == "none"]
    if bad:
        raise e._bad("algorithms", ",".join(bad), "asymmetric algorithms only (RS256, ES256, EdDSA, ...)")


def _smtp_config(ap: _Reader) -> SmtpConfig:
    s = ap.sub("smtp")
    return SmtpConfig(
        host=s.text("host", ""),
        port=s.integer("port", 587, minimum=1),
        username=s.opt_text("username"),
        password=s.opt_text("password"),
        start_tls=s.opt_bool("startTls"),
        use_tls=s.boolean("useTls", False),
        sender=s.text("from", "pluginsdk@localhost"),
        timeout=s.number("timeout", 10.0, minimum=0.1),
    )


def _secrets_key(ap: _Reader) -> bytes | None:
    """`secretsKey`: 32 bytes, base64url-encoded, or unset."""
    raw_key = ap.opt_text("secretsKey")
    secrets_key: bytes | None = None
    if raw_key is not None:
        try:
            secrets_key = base64.urlsafe_b64decode(raw_key + "=" * (-len(raw_key) % 4))
        except ValueError:
            secrets_key = None
        if secrets_key is None or len(secrets_key) != 32:
            raise ap._bad("secretsKey", "***", "32 bytes, base64url-encoded")
    return secrets_key
