"""Counted nouns in messages: "1 template", "2 templates" (never "1 templates" or "template(s)")."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, singular for exactly one, else `plural` (default: noun + "s")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
