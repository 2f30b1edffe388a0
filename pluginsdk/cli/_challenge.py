"""`auth login`'s challenges answered in the same command: the new password, then the MFA code.

On a terminal each is asked for (hidden; a new password twice); piped, each is the next line of stdin
(`printf '%s\n' TEMPORARY NEW | pluginsdk auth login bob`). A challenge left unanswered (stdin at its end)
is printed, its message naming the option that answers it (`--new-password`, `--totp-code`).
"""

from __future__ import annotations

import sys
from typing import Any

import click

__all__ = ["answer_challenges"]

_ANSWERS = {
    "NEW_PASSWORD_REQUIRED": ("new_password", "New password", True),
    "SOFTWARE_TOKEN_MFA": ("totp_code", "MFA code", False),
}
"""challenge -> (field that answers it, prompt, confirm the value)."""


def _ask(label: str, confirm: bool) -> str:
    if sys.stdin.isatty():
        return str(click.prompt(label, hide_input=True, err=True, confirmation_prompt=confirm)).strip()
    return sys.stdin.readline().rstrip("\r\n")


async def answer_challenges(sdk: Any, params: dict[str, Any], result: Any) -> Any:
    """Sign in again with each challenge's answer until tokens come back or an answer is missing."""
    while (challenge := getattr(result, "challenge_name", None)) in _ANSWERS:
        field, label, confirm = _ANSWERS[challenge]
        value = None if params.get(field) else _ask(label, confirm)
        if not value:  # given already and asked again, or nothing more to read: say which option answers it
            flag = "--" + field.replace("_", "-")
            return result.model_copy(update={"message": str(result.message or "").replace(field, flag)})
        params[field] = value
        result = await sdk.call("login", **params)
    return result
