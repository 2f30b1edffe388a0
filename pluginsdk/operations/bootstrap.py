"""Client bootstrap: web-client configuration, runtime configuration, version, login profiles."""

from pydantic import Field

from ..models.auth_results import AmplifyConfig, LoginProfile, SecureConfig, VersionInfo
from ._base import Cli, Command, Policy, Query, Rest
from .auth_fields import UserId

__all__ = [
    "GetAmplifyConfigQuery",
    "GetLoginProfileQuery",
    "GetSecureConfigQuery",
    "GetVersionQuery",
    "UpdateLoginProfileCommand",
]


class GetAmplifyConfigQuery(Query[AmplifyConfig]):
    """The web client's bootstrap configuration (no sign-in needed)."""

    rest = Rest("GET", "/api/amplify-config", camel=True)
    cli = Cli("auth", "amplify-config")
    policy = Policy(unauthenticated=True, category="bootstrap")


class GetVersionQuery(Query[VersionInfo]):
    """The service version (no sign-in needed)."""

    rest = Rest("GET", "/api/version", camel=True)
    cli = Cli("auth", "version")
    policy = Policy(unauthenticated=True, category="bootstrap")


class GetSecureConfigQuery(Query[SecureConfig]):
    """Runtime configuration for signed-in clients (feature flags, service URLs)."""

    rest = Rest("GET", "/secure-config", camel=True)
    cli = Cli("auth", "secure-config")
    policy = Policy(category="bootstrap")


class GetLoginProfileQuery(Query[LoginProfile]):
    """The caller's own login profile."""

    rest = Rest("GET", "/auth/loginProfile/{user_id}", camel=True)
    cli = Cli("auth", "profile", args=("user_id",))
    policy = Policy(category="loginProfile")

    user_id: UserId
    """The caller's own identity."""


class UpdateLoginProfileCommand(Command[LoginProfile]):
    """Write the caller's own login profile (the user pool's email wins when it knows one)."""

    rest = Rest("POST", "/auth/loginProfile/{user_id}", camel=True)
    cli = Cli("auth", "profile-update", args=("user_id",))
    policy = Policy(
        category="loginProfile", unaudited="a user's own contact details (e-mail, name), not an access change"
    )

    user_id: UserId
    """The caller's own identity."""
    email: str | None = Field(None, max_length=320)
    """Email address."""
