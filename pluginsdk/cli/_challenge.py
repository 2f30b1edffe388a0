"""`auth login`'s challenges answered in the same command: the new password, then the MFA code.

On a terminal each is asked for (hidden; a new password twice); when the password came piped on stdin, each
is the next line of it (`printf '%s\n' TEMPORARY NEW | pluginsdk auth login bob`). Otherwise — and when
stdin is at its end — the challenge is printed, its message naming the option that answers it
(`--new-password`, `--totp-code`); stdin that is not a terminal is never waited on unless it was piped to.
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


def _ask(label: str, confirm: bool, piped: bool) -> str:
    if sys.stdin.isatty():
        return str(click.prompt(label, hide_input=True, err=True, confirmation_prompt=confirm)).strip()
    return sys.stdin.readline().rstrip("\r\n") if piped else ""


async def answer_challenges(sdk: Any, params: dict[str, Any], result: Any, *, piped: bool) -> Any:
    """Sign in again with each challenge's answer until tokens come back or an answer is missing.

    `piped`: the password was read from piped stdin, so the answers are its next lines.
    """
    while (challenge := getattr(result, "challenge_name", None)) in _ANSWERS:
        field, label, confirm = _ANSWERS[challenge]
        value = None if params.get(field) else _ask(label, confirm, piped)
        if not value:  # given already and asked again, or nothing more to read: say which option answers it
            flag = "--" + field.replace("_", "-")
            return result.model_copy(update={"message": str(result.message or "").replace(field, flag)})
        params[field] = value
        result = await sdk.call("login", **params)
    return result
