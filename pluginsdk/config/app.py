"""`app`: the auth service's settings (docs/auth.md) — the identity provider mode, authorization options, mail,
the sealing key given inline, the audit sample rate and what the web client is told. Keys are camelCase."""

import base64
from typing import Annotated, Any, Literal, Self

import pydantic
from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from ..principal import SYSTEM_ADMIN
from .fields import Flag, FlagOrBlank, Number, OptionalFlag, OptionalText, Texts, Whole, wrong
from .group import SECRET
from .identity import AppGroup, ExternalIdpSettings, FederationSettings, ManagedPoolSettings, web_url

__all__ = [
    "AppSettings",
    "AuditSettings",
    "AuthProviderSettings",
    "AuthorizerOptionsSettings",
    "SmtpSettings",
]


class AuthorizerOptionsSettings(AppGroup):
    """`app.authProvider.authorizerOptions`."""

    defaultUserRoleName: OptionalText = None
    """Role a user with no (existing) roles is evaluated as holding; unset: such a user is refused."""


class SmtpSettings(AppGroup):
    """`app.authProvider.smtp`: the mail server temporary passwords are sent through."""

    host: str = ""
    """Without it, a temporary password is returned once to the administrator instead."""
    port: Whole = Field(587, ge=1, le=65535)
    username: OptionalText = None
    password: Annotated[OptionalText, SECRET] = None
    startTls: OptionalFlag = None
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
    raise wrong("", "***", "32 bytes, base64url-encoded")


class AuthProviderSettings(AppGroup):
    """`app.authProvider`: who callers are and who may do what (docs/auth.md). At most one identity provider
    mode is on: the managed user pool, an external OAuth IdP, or neither (API keys and in-process calls)."""

    useManaged: ManagedPoolSettings = Field(default_factory=ManagedPoolSettings.model_construct)
    useExternalOAuthIdp: ExternalIdpSettings = Field(default_factory=ExternalIdpSettings.model_construct)
    authorizerOptions: AuthorizerOptionsSettings = Field(default_factory=AuthorizerOptionsSettings.model_construct)
    adminUserId: str = SYSTEM_ADMIN.user_id
    """User that receives the `admin` role; the in-process SDK acts as this user unless `sdk.user` says otherwise."""
    disableAuthorization: FlagOrBlank = False
    """`true` runs with no authorization at all: every caller is the admin user, every call is allowed."""
    secretsKey: Annotated[str | None, SECRET, BeforeValidator(_seal_key)] = None
    """The key that seals secrets in the store, given here instead of in a key file."""
    smtp: SmtpSettings = Field(default_factory=SmtpSettings.model_construct)
    federation: FederationSettings = Field(default_factory=FederationSettings.model_construct)

    @pydantic.model_validator(mode="after")
    def _one_mode(self) -> Self:
        managed = self.useManaged
        if managed.enabled and self.useExternalOAuthIdp.enabled and not managed.useOidc:
            raise wrong(
                "useExternalOAuthIdp.enabled",
                True,
                "useExternalOAuthIdp cannot be combined with useManaged, except as useManaged.useOidc's provider",
            )
        if managed.useOidc:
            try:
                self.useExternalOAuthIdp.checked()
            except PydanticCustomError as err:
                key = f"useExternalOAuthIdp.{(err.context or {}).get('key', '')}".rstrip(".")
                raise wrong(key, (err.context or {}).get("value"), f"{err.message()} for useManaged.useOidc") from None
        saml = self.federation.saml
        if managed.useSaml:
            for key in ("idpMetadataFile", "spBaseUrl"):
                if not getattr(saml, key):
                    raise wrong(f"federation.saml.{key}", "", "a value (needed by useManaged.useSaml)")
            if not web_url(saml.spBaseUrl):
                raise wrong("federation.saml.spBaseUrl", saml.spBaseUrl, "an https:// URL (http:// only on loopback)")
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


class AuditSettings(AppGroup):
    """`app.audit`."""

    decisionSampleRate: Number = Field(0.0, ge=0, le=1)
    """Share of the decisions asked through the decision point that are recorded (0: none, 1: all)."""


class AppSettings(AppGroup):
    """`app`: the auth service's settings (docs/auth.md). This module is imported only when a configuration
    gives `app` (validated at load) or something reads `Settings.app` (then made from these defaults)."""

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
