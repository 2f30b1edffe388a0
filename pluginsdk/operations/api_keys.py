"""API keys: the administrative variant (any user's keys) and the self-service variant (the caller's own)."""

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema, field_validator, model_validator

from .._pagination import PageToken
from ..models.auth_results import ApiKeyCreated, ApiKeyList, ApiKeyResult
from ._base import Audit, Cli, Command, Policy, Query, R_co, Rest
from .auth_fields import ApiKeyName, Description, Expiry, PartialUpdate, UserId, strip_spaces, strip_text

__all__ = [
    "CreateAPIKeyCommand",
    "CreateMyAPIKeyCommand",
    "DeleteAPIKeyCommand",
    "DeleteMyAPIKeyCommand",
    "GetAPIKeyQuery",
    "GetMyAPIKeyQuery",
    "ListAPIKeysQuery",
    "ListMyAPIKeysQuery",
    "UpdateAPIKeyCommand",
    "UpdateMyAPIKeyCommand",
]

_ADMIN = Policy(category="apiKeys")
_SELF = Policy(category="userApiKeys")
_KEY_ID = r"^[A-Za-z0-9\-]{1,64}$"


class _ListKeys(Query[R_co]):
    max_items: int = Field(3000, ge=1)
    """Most keys per page (1-3000; larger values are clamped)."""
    page_size: int = Field(1000, ge=1)
    """Keys per page (default 1000; clamped to max_items)."""
    starting_token: PageToken | None = None
    """NextToken of the previous page, unmodified."""


class ListAPIKeysQuery(_ListKeys[ApiKeyList]):
    """List every user's API keys (administrators)."""

    rest = Rest("GET", "/auth/api-keys", camel=True)
    cli = Cli("api-keys", "list")
    policy = _ADMIN

    user_id: UserId | None = None
    """Only this user's keys."""


class ListMyAPIKeysQuery(_ListKeys[ApiKeyList]):
    """List the caller's own API keys."""

    rest = Rest("GET", "/auth/user/api-keys", camel=True)
    cli = Cli("api-keys", "list-mine")
    policy = _SELF


class GetAPIKeyQuery(Query[ApiKeyResult]):
    """Show one API key (never its secret)."""

    rest = Rest("GET", "/auth/api-keys/{api_key_id}", camel=True)
    cli = Cli("api-keys", "show", args=("api_key_id",))
    policy = _ADMIN

    api_key_id: str = Field(pattern=_KEY_ID)
    """Key to show."""


class GetMyAPIKeyQuery(Query[ApiKeyResult]):
    """Show one of the caller's API keys."""

    rest = Rest("GET", "/auth/user/api-keys/{api_key_id}", camel=True)
    cli = Cli("api-keys", "show-mine", args=("api_key_id",))
    policy = _SELF

    api_key_id: str = Field(pattern=_KEY_ID)
    """Key to show."""


class _CreateKey(Command[R_co]):
    api_key_name: ApiKeyName
    """Display name, unique per user; cannot change later (1-128 of letters, digits, space, _ - . : @ + ( ) / , #)."""
    description: Description
    """What the key is for (4-256 characters after trimming)."""

    _strip_name = field_validator("api_key_name", mode="before")(strip_spaces)


class CreateAPIKeyCommand(_CreateKey[ApiKeyCreated]):
    """Issue an API key acting as any user who holds a role (administrators); the secret is shown once."""

    rest = Rest("POST", "/auth/api-keys", camel=True)
    cli = Cli("api-keys", "create", args=("api_key_name", "user_id"))
    policy = _ADMIN._replace(audit=Audit("apiKey", ("api_key_id",), snapshot=True))

    user_id: UserId
    """User the key acts as (must hold a role assignment)."""
    expires_at: Expiry | None = None
    """Expiry, ISO 8601 with a time zone, in the future; a date alone means the end of that day UTC."""


class CreateMyAPIKeyCommand(_CreateKey[ApiKeyCreated]):
    """Issue an API key acting as the caller; the secret is shown once."""

    rest = Rest("POST", "/auth/user/api-keys", camel=True)
    cli = Cli("api-keys", "create-mine", args=("api_key_name",))
    policy = _SELF._replace(audit=Audit("apiKey", ("api_key_id",), snapshot=True))

    expires_at: Expiry
    """Expiry (ISO 8601 with a time zone, or a date), at most 365 days from now."""


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


_EXPIRY_OR_BLANK = {
    "anyOf": [
        {"type": "string", "format": "date-time", "maxLength": 64},
        {"type": "string", "format": "date", "maxLength": 10},
        {"type": "string", "const": ""},
        {"type": "null"},
    ]
}

ClearableExpiry = Annotated[
    Expiry | None, BeforeValidator(_blank_is_none), WithJsonSchema(_EXPIRY_OR_BLANK, mode="validation")
]
"""An expiry where `""` means none (the VAMS web client's key form clears an expiry that way)."""


class _UpdateKey(PartialUpdate[R_co], Command):
    api_key_id: str = Field(pattern=_KEY_ID)
    """Key to update."""
    description: str | None = Field(None, min_length=4, max_length=256)
    """New description."""
    expires_at: ClearableExpiry = None
    """New expiry (ISO 8601 with a time zone, or a date); null or "" clears it (administrators only)."""
    is_active: str | None = Field(None, pattern=r"^(true|false)$")
    """The text `true` (enable) or `false` (disable)."""

    _strip = field_validator("description", mode="before")(strip_text)

    @model_validator(mode="after")
    def _something_to_change(self) -> "_UpdateKey":
        given = self.model_fields_set & {"description", "expires_at", "is_active"}
        if not given:
            raise ValueError("give at least one of description, expiresAt, isActive")
        if "description" in given and self.description is None:
            raise ValueError("description cannot be null")
        if "is_active" in given and self.is_active is None:
            raise ValueError("isActive must be the text 'true' or 'false'")
        return self


class UpdateAPIKeyCommand(_UpdateKey[ApiKeyResult]):
    """Update an API key's description, expiry (null clears it) or active flag (administrators)."""

    rest = Rest("PUT", "/auth/api-keys/{api_key_id}", camel=True)
    cli = Cli("api-keys", "update", args=("api_key_id",))
    policy = _ADMIN._replace(audit=Audit("apiKey", ("api_key_id",), snapshot=True))


class UpdateMyAPIKeyCommand(_UpdateKey[ApiKeyResult]):
    """Update one of the caller's keys (expiry stays within 365 days of its creation and cannot be cleared)."""

    rest = Rest("PUT", "/auth/user/api-keys/{api_key_id}", camel=True)
    cli = Cli("api-keys", "update-mine", args=("api_key_id",))
    policy = _SELF._replace(audit=Audit("apiKey", ("api_key_id",), snapshot=True))

    @model_validator(mode="after")
    def _no_clear(self) -> "UpdateMyAPIKeyCommand":
        if "expires_at" in self.model_fields_set and self.expires_at is None:
            raise ValueError("expiresAt cannot be cleared on a self-service key")
        return self


class DeleteAPIKeyCommand(Command[ApiKeyResult]):
    """Revoke an API key permanently (administrators)."""

    rest = Rest("DELETE", "/auth/api-keys/{api_key_id}", camel=True)
    cli = Cli("api-keys", "delete", args=("api_key_id",))
    policy = _ADMIN._replace(audit=Audit("apiKey", ("api_key_id",), snapshot=True))

    api_key_id: str = Field(pattern=_KEY_ID)
    """Key to revoke."""


class DeleteMyAPIKeyCommand(Command[ApiKeyResult]):
    """Revoke one of the caller's API keys permanently."""

    rest = Rest("DELETE", "/auth/user/api-keys/{api_key_id}", camel=True)
    cli = Cli("api-keys", "delete-mine", args=("api_key_id",))
    policy = _SELF._replace(audit=Audit("apiKey", ("api_key_id",), snapshot=True))

    api_key_id: str = Field(pattern=_KEY_ID)
    """Key to revoke."""
