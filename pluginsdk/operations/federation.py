"""Federated sign-in: the organisation's identity provider (OIDC or SAML 2.0) signs a user in to the managed
user pool, whose session tokens the caller then holds as after a password sign-in."""

from pydantic import Field

from ..models.auth_results import FederatedSignIn, SamlMetadata, SessionTokens, SignInOptions
from ._base import Cli, Command, Policy, Query, Rest
from .auth_fields import Sensitive

__all__ = [
    "FinishFederatedSignInCommand",
    "GetSamlMetadataQuery",
    "GetSignInOptionsQuery",
    "StartFederatedSignInCommand",
]


class GetSignInOptionsQuery(Query[SignInOptions]):
    """The identity provider users may sign in through (OIDC or SAML), if any."""

    rest = Rest("GET", "/auth/federation", camel=True)
    cli = Cli("auth", "sso-options")
    policy = Policy(unauthenticated=True, category="session")


class StartFederatedSignInCommand(Command[FederatedSignIn]):
    """Begin a sign-in at the identity provider: the URL to send the browser to.

    OIDC: authorization code with PKCE; `redirect_uri` is where the provider
    sends the browser back (the console's callback or a loopback URL).
    """

    rest = Rest("POST", "/auth/federation/start", camel=True)
    cli = Cli("auth", "sso-start")
    policy = Policy(unauthenticated=True, category="session", unaudited="begins a sign-in; changes no permission")

    redirect_uri: str = Field("", max_length=2048)
    """OIDC: the registered redirect URI the code comes back to."""


class FinishFederatedSignInCommand(Sensitive[SessionTokens], Command):
    """Complete a sign-in with the provider's answer; returns the session's tokens.

    The user is created on first sign-in and their roles set from their
    groups, as the federation settings map them (docs/auth.md).
    """

    rest = Rest("POST", "/auth/federation/finish", camel=True)
    cli = Cli("auth", "sso-finish")
    policy = Policy(
        unauthenticated=True,
        category="session",
        unaudited="a sign-in; the roles it maps from the provider's groups are the configuration's, not a change",
    )
    secret_fields = ("code", "saml_response")

    state: str = Field(min_length=16, max_length=256)
    """The `state` (OIDC) or `RelayState` (SAML) the provider sent back."""
    code: str | None = Field(None, min_length=1, max_length=4096)
    """OIDC: the authorization code."""
    saml_response: str | None = Field(None, min_length=1, max_length=262144)
    """SAML: the base64 `SAMLResponse` posted back."""


class GetSamlMetadataQuery(Query[SamlMetadata]):
    """This server's SAML service-provider metadata (entity id, assertion consumer URL)."""

    rest = Rest("GET", "/auth/federation/saml/metadata", camel=True)
    cli = Cli("auth", "saml-metadata")
    policy = Policy(unauthenticated=True, category="session")
