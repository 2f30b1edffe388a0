"""Sessions of the embedded (managed) user pool: sign-in, token refresh, TOTP MFA, passwords, JWKS."""

from pydantic import Field

from ..models.auth_results import Jwks, MfaSetup, SessionTokens
from ._base import Cli, Command, Policy, Query, Rest
from .auth_fields import Sensitive, UserId

__all__ = [
    "ChangePasswordCommand",
    "DisableMfaCommand",
    "GetJwksQuery",
    "LoginCommand",
    "LogoutCommand",
    "RefreshTokensCommand",
    "SetupMfaCommand",
    "VerifyMfaCommand",
]


class LoginCommand(Sensitive[SessionTokens], Command):
    """Sign in to the managed user pool with username and password; returns tokens or a challenge.

    Challenge NEW_PASSWORD_REQUIRED: call again with `new_password` (the
    temporary password must be replaced). SOFTWARE_TOKEN_MFA: call again with
    `totp_code`. A TOTP-verified session is multi-factor.
    """

    rest = Rest("POST", "/auth/login", camel=True, too_many="throttled")
    cli = Cli("auth", "login", args=("username",))
    policy = Policy(
        unauthenticated=True,
        category="session",
        unaudited="a sign-in changes no permission; failed attempts that lock an account are recorded by throttle.py",
    )
    secret_fields = ("password", "new_password")

    username: UserId
    """User id."""
    password: str
    """Current (or temporary) password."""
    new_password: str | None = None
    """Replacement password, when the temporary one must be changed."""
    totp_code: str | None = Field(None, pattern=r"^[0-9]{6}$")
    """Six-digit code of the authenticator app, for users with MFA enabled."""


class RefreshTokensCommand(Sensitive[SessionTokens], Command):
    """Exchange a refresh token for new id and access tokens (same session, same MFA state)."""

    rest = Rest("POST", "/auth/token", camel=True)
    cli = Cli("auth", "refresh")
    policy = Policy(unauthenticated=True, category="session", unaudited="renews a session; changes no permission")
    secret_fields = ("refresh_token",)

    refresh_token: str = Field(min_length=1, max_length=512)
    """The refresh token of the session."""


class LogoutCommand(Command[SessionTokens]):
    """End the caller's session: its refresh token stops working and its tokens are rejected."""

    rest = Rest("POST", "/auth/user/logout", camel=True)
    cli = Cli("auth", "logout")
    policy = Policy(category="session", unaudited="ends the caller's own session; changes no permission")


class ChangePasswordCommand(Sensitive[SessionTokens], Command):
    """Change the caller's managed-pool password; other sessions are signed out."""

    rest = Rest("POST", "/auth/user/password", camel=True, too_many="throttled")
    cli = Cli("auth", "change-password")
    policy = Policy(
        category="session",
        unaudited="recorded by its handler (audit.user_change), with the user as read in its transaction",
    )
    secret_fields = ("previous_password", "proposed_password")

    previous_password: str
    """Current password."""
    proposed_password: str
    """New password."""


class SetupMfaCommand(Command[MfaSetup]):
    """Start TOTP set-up for the caller's signed-in session: returns a secret for an authenticator app.

    With MFA already enabled this replaces the authenticator, so it needs the current factor: a
    multi-factor session, or `code` from the enrolled authenticator. The new secret takes over only when
    this same session verifies it (`verify_mfa`). API keys cannot set up MFA.
    """

    rest = Rest("POST", "/auth/user/mfa/setup", camel=True, too_many="throttled")
    cli = Cli("auth", "mfa-setup")
    policy = Policy(
        category="session",
        unaudited="recorded by its handler (audit.user_change), with the user as read in its transaction",
    )

    code: str | None = Field(None, pattern=r"^[0-9]{6}$")
    """Six-digit code of the enrolled authenticator, when MFA is enabled and this session is not multi-factor."""


class VerifyMfaCommand(Command[SessionTokens]):
    """Confirm the TOTP set-up this session started with a code: MFA is enabled and the session becomes multi-factor."""

    rest = Rest("POST", "/auth/user/mfa/verify", camel=True)
    cli = Cli("auth", "mfa-verify", args=("code",))
    policy = Policy(
        category="session",
        unaudited="recorded by its handler (audit.user_change), with the user as read in its transaction",
    )

    code: str = Field(pattern=r"^[0-9]{6}$")
    """Six-digit code from the authenticator app."""


class DisableMfaCommand(Command[SessionTokens]):
    """Turn the caller's MFA off; needs the current factor (a multi-factor session, or `code`).

    The user's sessions stop being multi-factor. A lost authenticator is cleared by an administrator
    (`reset_managed_user_mfa`).
    """

    rest = Rest("POST", "/auth/user/mfa/disable", camel=True, too_many="throttled")
    cli = Cli("auth", "mfa-disable")
    policy = Policy(
        category="session",
        unaudited="recorded by its handler (audit.user_change), with the user as read in its transaction",
    )

    code: str | None = Field(None, pattern=r"^[0-9]{6}$")
    """Six-digit code of the enrolled authenticator, when this session is not multi-factor."""


class GetJwksQuery(Query[Jwks]):
    """The public keys that sign managed-pool tokens (JWK Set; no sign-in needed)."""

    rest = Rest("GET", "/auth/.well-known/jwks.json", camel=True)
    cli = Cli("auth", "jwks")
    policy = Policy(unauthenticated=True, category="session")
