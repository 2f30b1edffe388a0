"""Result objects of the auth service (roles, user roles, users, API keys, routes, sessions).

They render camelCase on the auth-service REST routes (their clients read
`roleName`, `apiKeyId`, ...); a few keys the spec spells differently carry an
explicit alias (`Items`, `NextToken`, `route__path`). A key the spec says is
"present only when ..." is left out of the output when it is None. Secrets
(API keys, TOTP seeds, tokens) never show in `str()` or `repr()`.
"""

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from ._base import BaseModel
from ._display import Decided, ManyDecided
from .auth import Constraint
from .results import Result

__all__ = [
    "AccessGranted",
    "AllowedApiRoute",
    "AllowedApiRoutes",
    "AllowedWebRoute",
    "AmplifyConfig",
    "ApiKey",
    "ApiKeyCreated",
    "ApiKeyList",
    "ApiKeyResult",
    "ApiRoute",
    "ApiRouteList",
    "AuthorizationDecision",
    "ConstraintItems",
    "ConstraintList",
    "ConstraintWritten",
    "FederatedSignIn",
    "FilteredObjects",
    "Jwks",
    "LabelValue",
    "LoginProfile",
    "ManagedUser",
    "ManagedUserList",
    "ManagedUserWritten",
    "MfaSetup",
    "ObjectTypeInfo",
    "PermissionObjects",
    "PermissionObjectsBody",
    "Role",
    "RoleItems",
    "RoleList",
    "RoleWritten",
    "SamlMetadata",
    "SecureConfig",
    "SessionTokens",
    "SignInOptions",
    "UserRoleAssignment",
    "UserRoleItems",
    "UserRoleList",
    "UserRolesWritten",
    "VersionInfo",
    "WebRoute",
    "WebRoutesAllowed",
]


def _absent_if_none(value: Any) -> bool:
    return value is None


def _mask(model: BaseModel, secret_fields: tuple[str, ...]) -> str:
    shown = {k: ("***" if k in secret_fields and v else v) for k, v in model.to_dict(exclude_none=True).items()}
    return f"{type(model).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


# -- roles and user roles ------------------------------------------------------
class Role(BaseModel):
    """A role: constraints name it in groupPermissions; users receive it through user-role assignments."""

    id: str
    """Generated identifier."""
    role_name: str
    """Unique, immutable name."""
    description: str
    created_on: datetime
    source: str | None = None
    """Where the role comes from (e.g. INTERNAL_SYSTEM)."""
    source_identifier: str | None = None
    mfa_required: bool = False
    """When true the role's constraints apply only to multi-factor sessions."""


class RoleItems(BaseModel):
    items: list[Role] = Field([], alias="Items")


class RoleList(BaseModel):
    """`GET /roles`: `message.Items`."""

    message: RoleItems = Field(default_factory=RoleItems)

    def page_items(self) -> list[Role]:
        return self.message.items


class RoleWritten(Result):
    """Outcome of a role create, update or delete."""

    role_name: str
    operation: str


class UserRoleAssignment(BaseModel):
    """The roles one user holds."""

    user_id: str
    role_name: list[str] = []
    created_on: datetime


class UserRoleItems(BaseModel):
    items: list[UserRoleAssignment] = Field([], alias="Items")


class UserRoleList(BaseModel):
    """`GET /user-roles`: `message.Items`."""

    message: UserRoleItems = Field(default_factory=UserRoleItems)

    def page_items(self) -> list[UserRoleAssignment]:
        return self.message.items


class UserRolesWritten(Result):
    """Outcome of a user-role create, replace or delete."""

    user_id: str
    operation: str
    role_name: list[str] | None = Field(None, exclude_if=_absent_if_none)
    """The user's roles after the change (absent after delete)."""


# -- constraints (the Constraint model itself lives in models/auth.py) -------------
class ConstraintItems(BaseModel):
    items: list[Constraint] = Field([], alias="Items")
    next_token: str | None = Field(None, alias="NextToken", exclude_if=_absent_if_none)
    """Present only while more constraints remain."""


class ConstraintList(BaseModel):
    """`GET /auth/constraints`: `message.Items`, and `message.NextToken` while more remain."""

    message: ConstraintItems = Field(default_factory=ConstraintItems)

    def page_items(self) -> list[Constraint]:
        return self.message.items


class ConstraintWritten(Result):
    """Outcome of a constraint create, update or delete."""

    constraint_id: str
    operation: str
    constraint: str | None = Field(None, exclude_if=_absent_if_none)
    """JSON text of the stored constraint (with an `identifier` field); absent after delete."""


class AccessGranted(Result):
    """Outcome of `grant_access`: the object constraint (tier 2) and the route constraints (tier 1) that together let
    a role act on the objects."""

    constraint_ids: list[str] = []
    """The object constraint's id, then one route constraint's per method that has routes for the object type."""
    routes: list[str] = []
    """The routes opened, as `METHOD route__path-pattern` (`GET /api/v1/templates/web-*`)."""
    created: bool = True
    """False when every constraint existed already as asked (nothing was written)."""


class LabelValue(BaseModel):
    label: str
    value: str


class ObjectTypeInfo(LabelValue):
    fields: list[LabelValue] = []


class PermissionObjectsBody(BaseModel):
    object_types: list[ObjectTypeInfo] = []
    operators: list[LabelValue] = []
    permissions: list[LabelValue] = []
    permission_types: list[LabelValue] = []


class PermissionObjects(BaseModel):
    """The authoritative values for objectType, criterion field, operator, permission and permissionType."""

    message: PermissionObjectsBody = Field(default_factory=PermissionObjectsBody)


# -- managed users ----------------------------------------------------------------
class ManagedUser(BaseModel):
    """A user of the embedded (managed) user pool."""

    user_id: str
    email: str
    phone: str | None = None
    """E.164."""
    user_status: str
    """CONFIRMED, or FORCE_CHANGE_PASSWORD until the temporary password is replaced; FEDERATED for a user
    the identity provider signs in."""
    enabled: bool = True
    user_create_date: datetime
    user_last_modified_date: datetime
    mfa_enabled: bool = False


class ManagedUserList(BaseModel):
    """`GET /user/managed`: `users`, and `NextToken` while more remain."""

    users: list[ManagedUser] = []
    next_token: str | None = Field(None, alias="NextToken", exclude_if=_absent_if_none)

    def page_items(self) -> list[ManagedUser]:
        return self.users


class ManagedUserWritten(Result):
    """Outcome of a managed-user create, update, delete or password reset."""

    user_id: str
    operation: str
    user: ManagedUser | None = Field(None, exclude_if=_absent_if_none)
    temporary_password: str | None = Field(None, repr=False, exclude_if=_absent_if_none)
    """Only where no mail server is configured (create, reset): the temporary password, shown this once
    for the administrator to hand over; it must be replaced at the first sign-in."""

    def __str__(self) -> str:
        return _mask(self, ("temporary_password",))


# -- API keys ---------------------------------------------------------------------
class ApiKey(BaseModel):
    """An API key's record (never its secret)."""

    api_key_id: str
    api_key_name: str
    description: str
    user_id: str
    """The user the key acts as."""
    created_by: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    is_active: str = "true"
    """The text `true` or `false`."""


class ApiKeyResult(ApiKey):
    """One key (get, update)."""

    message: str = ""


class ApiKeyCreated(ApiKey):
    """A new key: its record plus the secret, shown this once."""

    api_key: str = Field(repr=False)
    """The secret; it cannot be retrieved later."""
    message: str = ""

    def __str__(self) -> str:
        return _mask(self, ("api_key",))

    def __repr__(self) -> str:
        return _mask(self, ("api_key",))


class ApiKeyList(BaseModel):
    """A page of keys: `Items`; `NextToken` and `truncated` only while more remain."""

    model_config = ConfigDict(alias_generator=None)

    items: list[ApiKey] = Field([], alias="Items")
    next_token: str | None = Field(None, alias="NextToken", exclude_if=_absent_if_none)
    truncated: bool | None = Field(None, exclude_if=_absent_if_none)

    def page_items(self) -> list[ApiKey]:
        return self.items


# -- routes, profiles, bootstrap ----------------------------------------------------
class ApiRoute(BaseModel):
    path: str
    """Route template."""
    methods: list[str] = []
    category: str
    unauthenticated: bool = False


class ApiRouteList(BaseModel):
    """Every API route of the service."""

    routes: list[ApiRoute] = []

    def page_items(self) -> list[ApiRoute]:
        return self.routes


class AllowedApiRoute(BaseModel):
    path: str
    methods: list[str] = []
    """Only the methods the caller may use."""
    category: str


class AllowedApiRoutes(BaseModel):
    """The API routes the caller may use."""

    routes: list[AllowedApiRoute] = []
    user_id: str

    def page_items(self) -> list[AllowedApiRoute]:
        return self.routes


class WebRoute(BaseModel):
    """A web-client route to check."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(pattern=r"^(GET|PUT|POST|DELETE)$")
    route__path: str = Field(alias="route__path", min_length=1, max_length=512)


class AllowedWebRoute(BaseModel):
    method: str
    route__path: str = Field(alias="route__path")
    object__type: str = Field("web", alias="object__type")


class WebRoutesAllowed(BaseModel):
    """The web routes the caller may open."""

    allowed_routes: list[AllowedWebRoute] = []
    email: str
    """The requester's identity."""


class LoginProfile(BaseModel):
    """The caller's login profile (identity-only until one is written)."""

    model_config = ConfigDict(extra="allow")

    user_id: str
    email: str | None = Field(None, exclude_if=_absent_if_none)


class AmplifyConfig(BaseModel):
    """What the web client needs before sign-in."""

    model_config = ConfigDict(alias_generator=None)

    region: str
    api: str
    managed_user_pool_id: str = Field("undefined", alias="managedUserPoolId")
    managed_app_client_id: str = Field("undefined", alias="managedAppClientId")
    managed_identity_pool_id: str = Field("undefined", alias="managedIdentityPoolId")
    managed_user_pool_endpoint: str = Field("undefined", alias="managedUserPoolEndpoint")
    content_security_policy: str = Field("", alias="contentSecurityPolicy")
    banner_html_message: str = Field("", alias="bannerHtmlMessage")
    external_oauth_idp_url: str | None = Field(None, alias="externalOAuthIdpURL", exclude_if=_absent_if_none)
    external_oauth_idp_client_id: str | None = Field(None, alias="externalOAuthIdpClientId", exclude_if=_absent_if_none)
    external_oauth_idp_scope: str | None = Field(None, alias="externalOAuthIdpScope", exclude_if=_absent_if_none)
    external_oauth_idp_scope_mfa: str | None = Field(None, alias="externalOAuthIdpScopeMfa", exclude_if=_absent_if_none)
    external_oauth_idp_token_endpoint: str | None = Field(
        None, alias="externalOAuthIdpTokenEndpoint", exclude_if=_absent_if_none
    )
    external_oauth_idp_authorization_endpoint: str | None = Field(
        None, alias="externalOAuthIdpAuthorizationEndpoint", exclude_if=_absent_if_none
    )
    external_oauth_idp_discovery_endpoint: str | None = Field(
        None, alias="externalOAuthIdpDiscoveryEndpoint", exclude_if=_absent_if_none
    )


class SecureConfig(BaseModel):
    """Runtime configuration for signed-in clients."""

    features_enabled: str = ""
    """Comma-separated feature flags."""
    location_service_api_url: str = ""
    web_deployed_url: str = ""


class VersionInfo(BaseModel):
    """The service version."""

    version: str


# -- sessions ------------------------------------------------------------------------
class SessionTokens(BaseModel):
    """Tokens of a managed-pool session, or the challenge that must be answered first."""

    id_token: str | None = Field(None, repr=False, exclude_if=_absent_if_none)
    """Present it as `Authorization: Bearer <id_token>`."""
    access_token: str | None = Field(None, repr=False, exclude_if=_absent_if_none)
    refresh_token: str | None = Field(None, repr=False, exclude_if=_absent_if_none)
    """Exchange it for new tokens with `refresh_tokens`."""
    expires_in: int | None = Field(None, exclude_if=_absent_if_none)
    """Seconds the id and access tokens stay valid."""
    token_type: str | None = Field(None, exclude_if=_absent_if_none)
    challenge_name: str | None = Field(None, exclude_if=_absent_if_none)
    """NEW_PASSWORD_REQUIRED or SOFTWARE_TOKEN_MFA: call again with new_password / totp_code."""
    mfa: bool = False
    """Whether the session is multi-factor."""
    mfa_setup_required: bool = False
    """The user holds a role that requires MFA and has no authenticator: the role counts only once the user
    sets one up (setup_mfa, then verify_mfa) in this session."""
    message: str = ""

    def __str__(self) -> str:
        return _mask(self, ("id_token", "access_token", "refresh_token"))

    def __repr__(self) -> str:
        return _mask(self, ("id_token", "access_token", "refresh_token"))


class MfaSetup(BaseModel):
    """A pending TOTP secret: add it to an authenticator app, then call `verify_mfa` with a code."""

    secret_code: str = Field(repr=False)
    otpauth_uri: str = Field(repr=False)
    message: str = ""

    def __str__(self) -> str:
        return _mask(self, ("secret_code", "otpauth_uri"))

    def __repr__(self) -> str:
        return _mask(self, ("secret_code", "otpauth_uri"))


class Jwks(BaseModel):
    """The public keys that sign managed-pool tokens (RFC 7517 JWK Set)."""

    keys: list[dict[str, Any]] = []


# -- authorization checks for embedding services ------------------------------------
class AuthorizationDecision(Decided, BaseModel):
    """Whether the caller may act on one object."""

    allowed: bool
    object_type: str
    method: str
    user_id: str


class FilteredObjects(ManyDecided, BaseModel):
    """The objects the caller may act on, in input order, and their input positions."""

    allowed: list[dict[str, Any]] = []
    indexes: list[int] = []
    object_type: str
    method: str
    user_id: str


class SignInOptions(BaseModel):
    """The organisation's identity provider this server signs users in through, if any."""

    federation: str | None = None
    """`oidc` or `saml`; None: only passwords and API keys."""
    display_name: str = ""
    """What the sign-in button calls the provider."""
    passwords: bool = True
    """Whether the managed user pool takes password sign-ins (`login`); false: API keys (and the provider) only."""
    end_session_url: str | None = Field(None, exclude_if=_absent_if_none)
    """OIDC: the provider's end_session_endpoint, where signing out also ends the provider's session."""
    client_id: str | None = Field(None, exclude_if=_absent_if_none)
    """OIDC: this server's client id at the provider (the end-session request names it)."""


class FederatedSignIn(BaseModel):
    """A sign-in begun at the identity provider: send the browser to `redirect_url`."""

    redirect_url: str
    """The provider's authorization URL (OIDC) or sign-in URL with the SAML request."""
    state: str
    """Returned with the provider's answer; `finish_federated_sign_in` needs it (single use, 10 minutes)."""


class SamlMetadata(BaseModel):
    """This server's SAML 2.0 service-provider metadata, for the identity provider's administrator."""

    entity_id: str
    acs_url: str
    """Assertion consumer service (HTTP-POST binding)."""
    metadata: str
    """The metadata XML (also served at /ui/sso/saml/metadata)."""
