"""Who callers are, under `app.authProvider`: the managed user pool (passwords, sign-in limits), an external
OAuth IdP whose tokens are verified, and federated sign-in (OIDC, SAML) with its role mapping."""

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlparse

import pydantic
from pydantic import ConfigDict, Field

from .fields import Flag, Number, OptionalText, Texts, Whole, wrong
from .group import SECRET, SettingsGroup

__all__ = [
    "AppGroup",
    "ExternalIdpSettings",
    "FederationSettings",
    "ManagedPoolSettings",
    "PasswordHashingSettings",
    "SamlSettings",
    "SignInLimitsSettings",
    "web_url",
]


class AppGroup(SettingsGroup):
    """A group of `app`: keys in camelCase (docs/auth.md), a key given as null is unset (its default holds)."""

    model_config = ConfigDict(allow_inf_nan=False)

    @pydantic.model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, Mapping) else data


class PasswordHashingSettings(AppGroup):
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
    def _argon2_floor(self) -> Self:
        if self.memoryKib < 8 * self.parallelism:
            raise wrong("memoryKib", self.memoryKib, f"at least 8 x parallelism ({8 * self.parallelism})")
        return self


class SignInLimitsSettings(AppGroup):
    """`app.authProvider.useManaged.signInLimits`: failed sign-ins (wrong password or TOTP code), counted in
    the store per account name and per client address, so every server on one store agrees."""

    accountFailures: Whole = Field(5, ge=1)
    clientFailures: Whole = Field(30, ge=1)
    failureWindowSeconds: Number = Field(900.0, ge=1)
    lockSeconds: Number = Field(300.0, ge=0.1)


class ManagedPoolSettings(AppGroup):
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
    def _one_federation(self) -> Self:
        if self.useOidc and self.useSaml:
            raise wrong("", True, "only one federation method may be active: useOidc or useSaml, not both")
        if (self.useOidc or self.useSaml) and not self.enabled:
            raise wrong("", False, "useOidc/useSaml need useManaged.enabled true")
        return self


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ExternalIdpSettings(AppGroup):
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
    def _verifiable(self) -> Self:
        """Enabled: with what verifying its tokens needs, asymmetric algorithms only."""
        if not self.enabled:
            return self
        return self.checked()

    def checked(self) -> Self:
        """What verifying the IdP's tokens needs is here (also for OIDC sign-in, enabled or not)."""
        if not self.issuer:
            raise wrong("issuer", "", "a value (needed to verify the IdP's tokens)")
        if not (self.jwksUrl or self.discoveryEndpoint):
            raise wrong("jwksUrl", "", "a value, or discoveryEndpoint (needed to verify the IdP's tokens)")
        if not (self.audience or self.clientId):
            raise wrong("clientId", "", "the client id the IdP's tokens are issued to")
        for key in ("jwksUrl", "discoveryEndpoint", "authorizationEndpoint", "tokenEndpoint"):
            value = getattr(self, key)
            if value and not web_url(value):
                raise wrong(key, value, "an https:// URL (http:// only on loopback)")
        bad = [a for a in self.algorithms if a.startswith(("HS", "none"))]
        if bad:
            raise wrong("algorithms", ",".join(bad), "asymmetric algorithms only (RS256, ES256, EdDSA, ...)")
        return self

    @property
    def name(self) -> str:
        """What the sign-in button calls the IdP."""
        return self.displayName or urlparse(self.issuer).hostname or self.issuer


def web_url(value: str) -> bool:
    """An https:// URL, or http:// on loopback."""
    url = urlparse(value)
    return bool(url.hostname and (url.scheme == "https" or (url.scheme == "http" and url.hostname in _LOOPBACK)))


class SamlSettings(AppGroup):
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


class FederationSettings(AppGroup):
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
