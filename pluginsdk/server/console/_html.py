"""HTML built from string templates that escape by default: markupsafe's `Markup` (here `Safe`) — a value is
escaped unless it is `Safe` already (a rendered template, a fixed tag).

Bidirectional-control characters in a value are shown as their code point (`<U+202E>`), so a name cannot
reorder the text around it; the value of a form control keeps them (`value_of`), so editing changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from markupsafe import Markup, escape

__all__ = ["Safe", "esc", "join", "render", "value_of"]

_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

Safe = Markup
"""Markup that is already escaped: markupsafe's `Markup`."""


def esc(value: Any) -> Markup:
    """`value` as text inside HTML (element content or a quoted attribute)."""
    if isinstance(value, Markup):
        return value
    text = escape("" if value is None else str(value))
    return Markup(_BIDI.sub(lambda m: f"&lt;U+{ord(m.group()):04X}&gt;", text))  # noqa: S704 -- escaped above


def value_of(value: Any) -> Markup:
    """`value` as the value of a form control (an input's value, a textarea's text): escaped, its characters
    kept as they are, so a form sent back unchanged changes nothing (a control isolates its text)."""
    return escape("" if value is None else str(value))


def render(template: str, **values: Any) -> Markup:
    """`template` (markup written in the code, never data) with each `{name}` replaced by its value, escaped
    unless it is `Safe`."""
    return Markup(template).format_map({k: esc(v) for k, v in values.items()})  # noqa: S704 -- code's markup


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    """Parts (each escaped unless `Safe`) joined by the fixed markup `sep`."""
    return Markup(sep).join(esc(p) for p in parts)  # noqa: S704 -- the separator is the code's markup
