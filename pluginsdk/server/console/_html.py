"""HTML built from string templates whose values are escaped unless marked `Safe` (escaping by default).

Bidirectional-control characters in a value are shown as their code point (`<U+202E>`), so a name cannot
reorder the text around it; the value of a form control keeps them (`value_of`), so editing changes nothing.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["Safe", "esc", "join", "render", "value_of"]

_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Safe(str):
    """Markup that is already escaped (a rendered template, a fixed tag)."""


def esc(value: Any) -> Safe:
    """`value` as text inside HTML (element content or a quoted attribute)."""
    if isinstance(value, Safe):
        return value
    text = "" if value is None else str(value)
    return Safe(_BIDI.sub(lambda m: f"&lt;U+{ord(m.group()):04X}&gt;", html.escape(text, quote=True)))


def value_of(value: Any) -> Safe:
    """`value` as the value of a form control (an input's value, a textarea's text): escaped, its characters
    kept as they are, so a form sent back unchanged changes nothing (a control isolates its text)."""
    return Safe(html.escape("" if value is None else str(value), quote=True))


def render(template: str, **values: Any) -> Safe:
    """`template` with each `{name}` replaced by its value, escaped unless it is `Safe`."""
    return Safe(template.format_map({k: esc(v) for k, v in values.items()}))


def join(parts: Iterable[Any], sep: str = "") -> Safe:
    """Parts (each escaped unless `Safe`) joined by the fixed markup `sep`."""
    return Safe(sep.join(esc(p) for p in parts))
