"""Managed user-pool users (available when `app.authProvider.useManaged.enabled` is true)."""

from pydantic import Field, field_validator, model_validator

from .._pagination import PageToken
from ..models.auth_results import ManagedUserList, ManagedUserWritten
from ._base import Audit, Cli, Command, Policy, Query, Rest
from .auth_fields import PartialUpdate, UserId

__all__ = [
    "CreateManagedUserCommand",
    "DeleteManagedUserCommand",
    "ListManagedUsersQuery",
    "ResetManagedUserMfaCommand",
    "ResetManagedUserPasswordCommand",
    "UpdateManagedUserCommand",
]

E164 = r"^\+[1-9][0-9]{1,14}$"
EMAIL = r"^[^@\s]{1,64}@[^@\s]{1,255}$"
_USERS = Policy(category="users")


class ListManagedUsersQuery(Query[ManagedUserList]):
    """List managed user-pool users."""

    rest = Rest("GET", "/user/managed", camel=True, alt_paths=("/user/cognito",))
    cli = Cli("users", "list")
    policy = _USERS

    max_items: int = Field(60, ge=1, le=60)
    """Most users per page (1-60)."""
    page_size: int | None = Field(None, ge=1, le=60)
    """Users per page (1-60); takes precedence over max_items."""
    starting_token: PageToken | None = None
    """NextToken of the previous page, unmodified."""


class CreateManagedUserCommand(Command[ManagedUserWritten]):
    """Create a managed user with a temporary password, mailed to them (without SMTP: in the answer, once)."""

    rest = Rest("POST", "/user/managed", camel=True, alt_paths=("/user/cognito",), too_many="throttled")
    cli = Cli("users", "create", args=("user_id", "email"))
    policy = _USERS._replace(audit=Audit("managedUser", ("user_id",), snapshot=True))

    user_id: UserId
    """Username."""
    email: str = Field(pattern=EMAIL, max_length=320)
    """Email address (where the temporary password goes)."""
    phone: str | None = Field(None, pattern=E164)
    """Phone number in E.164 format (+15551234567)."""


class UpdateManagedUserCommand(PartialUpdate[ManagedUserWritten], Command):
    """Update a managed user: only the attributes given change."""

    rest = Rest("PUT", "/user/managed/{user_id}", camel=True, alt_paths=("/user/cognito/{user_id}",))
    cli = Cli("users", "update", args=("user_id",))
    policy = _USERS._replace(audit=Audit("managedUser", ("user_id",), snapshot=True))

    user_id: UserId
    """User to update."""
    email: str | None = Field(None, pattern=EMAIL, max_length=320)
    """New email address."""
    phone: str | None = Field(None, pattern=E164)
    """New phone number (E.164)."""
    clear_phone: bool | None = None
    """Remove the phone number (not together with phone)."""

    @model_validator(mode="after")
    def _one_change(self) -> "UpdateManagedUserCommand":
        if self.phone is not None and self.clear_phone is not None:
            raise ValueError("give phone or clearPhone, not both")
        if self.email is None and self.phone is None and not self.clear_phone:
            raise ValueError("give at least one of email, phone or clearPhone")
        return self


class DeleteManagedUserCommand(Command[ManagedUserWritten]):
    """Delete a managed user; their API keys and sessions stop working at once."""

    rest = Rest("DELETE", "/user/managed/{user_id}", camel=True, alt_paths=("/user/cognito/{user_id}",))
    cli = Cli("users", "delete", args=("user_id",))
    policy = _USERS._replace(audit=Audit("managedUser", ("user_id",), snapshot=True))

    user_id: UserId
    """User to delete."""


class ResetManagedUserPasswordCommand(Command[ManagedUserWritten]):
    """Reset a managed user's password: a new temporary one is mailed to them (without SMTP: in the answer, once)."""

    rest = Rest(
        "POST",
        "/user/managed/{user_id}/resetPassword",
        camel=True,
        alt_paths=("/user/cognito/{user_id}/resetPassword",),
        too_many="throttled",
    )
    cli = Cli("users", "reset-password", args=("user_id",))
    policy = _USERS._replace(audit=Audit("managedUser", ("user_id",), snapshot=True))

    user_id: UserId
    """User whose password is reset."""
    confirm_reset: bool | None = None
    """Must be true."""

    @field_validator("confirm_reset")
    @classmethod
    def _confirmed(cls, v: bool | None) -> bool | None:
        if v is not True:
            raise ValueError("confirmReset must be true to reset the password")
        return v

    @model_validator(mode="after")
    def _given(self) -> "ResetManagedUserPasswordCommand":
        if self.confirm_reset is not True:
            raise ValueError("confirmReset must be true to reset the password")
        return self


class ResetManagedUserMfaCommand(Command[ManagedUserWritten]):
    """Clear a managed user's MFA (a lost authenticator): they sign in with their password alone and may enrol again.

    The user's sessions stop being multi-factor; the reset is in the audit log.
    """

    rest = Rest("POST", "/user/managed/{user_id}/resetMfa", camel=True)
    cli = Cli("users", "reset-mfa", args=("user_id",))
    policy = _USERS._replace(audit=Audit("managedUser", ("user_id",), snapshot=True))

    user_id: UserId
    """User whose MFA is cleared."""
