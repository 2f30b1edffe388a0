"""Who is calling: every operation runs as a Principal."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SYSTEM_ADMIN", "Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller.

    `roles` are resolved from user-role assignments by the engine; an empty
    tuple means "resolve on use". `mfa` is true only for multi-factor
    sessions; API-key sessions never are.
    """

    user_id: str
    roles: tuple[str, ...] = ()
    mfa: bool = False
    auth_method: str = "local"
    """local (in-process), api_key, jwt, oauth."""
    api_key_id: str | None = None
    email: str | None = None
    claims: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
    policy_version: int | None = field(default=None, compare=False, hash=False, repr=False)
    """The policy version read with the credential when this principal was authenticated (an API key's one
    statement): the request is decided on the policy as of its authentication, without reading it again."""


SYSTEM_ADMIN = Principal(user_id="administrator", auth_method="local")
"""The in-process default: the configured administrator user."""
