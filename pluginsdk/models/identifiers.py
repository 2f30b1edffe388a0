"""The character sets of identifiers, one field type per kind, used by every operation that takes one.

Identifiers name things that authorization decides on (constraints match them as text) and that people read
in listings, so each kind is a small ASCII set: control characters, bidi overrides, zero-width characters and
every other invisible or look-alike character are outside it. A value whose NFKC form would fit (fullwidth
`ａｄｍｉｎ`, the ligature `ﬁ`) is refused with a message naming the plain form, never silently rewritten: the
JSON schema's `pattern` says exactly what is accepted, on every interface.

| kind | set |
|---|---|
| template id | 1-255 of letters, digits, `_ - .`, starting with a letter or digit |
| role name | 1-64 of letters, digits, `_ - .` and space, no space at either end |
| user id | 3-256 of letters, digits, `_ - . + @` (the spec's `[\\w\\-\\.\\+\\@]`, `\\w` read as ASCII) |
| constraint id | 1-128 of letters, digits, `_ - . :` |
| API key name | 1-128 of letters, digits, space and `_ - . : @ + ( ) / , #`, no space at either end |
"""

import functools
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

__all__ = [
    "API_KEY_NAME_PATTERN",
    "CONSTRAINT_ID_PATTERN",
    "ROLE_NAME_PATTERN",
    "TEMPLATE_ID_PATTERN",
    "USER_ID_PATTERN",
    "ApiKeyName",
    "ConstraintId",
    "RoleName",
    "TemplateId",
    "UserId",
    "identifier_problem",
    "pattern_problem",
]

TEMPLATE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,254}$"
ROLE_NAME_PATTERN = r"^(?:[A-Za-z0-9_.\-]|[A-Za-z0-9_.\-][A-Za-z0-9_.\- ]{0,62}[A-Za-z0-9_.\-])$"
USER_ID_PATTERN = r"^[A-Za-z0-9_\-\.\+\@]{3,256}$"
CONSTRAINT_ID_PATTERN = r"^[A-Za-z0-9_\-\.:]{1,128}$"
API_KEY_NAME_PATTERN = (
    r"^(?:[A-Za-z0-9_.:@+()/,#\-]|[A-Za-z0-9_.:@+()/,#\-][A-Za-z0-9_.:@+()/,#\- ]{0,126}[A-Za-z0-9_.:@+()/,#\-])$"
)

_SETS: dict[str, tuple[str, str]] = {
    "template id": (TEMPLATE_ID_PATTERN, "1-255 of letters, digits, '_', '-', '.', starting with a letter or digit"),
    "role name": (ROLE_NAME_PATTERN, "1-64 of letters, digits, '-', '_', '.', space (no space at either end)"),
    "user id": (USER_ID_PATTERN, "3-256 of letters, digits, '_', '-', '.', '+', '@'"),
    "constraint id": (CONSTRAINT_ID_PATTERN, "1-128 of letters, digits, '_', '-', '.', ':'"),
    "API key name": (
        API_KEY_NAME_PATTERN,
        "1-128 of letters, digits, space, '_', '-', '.', ':', '@', '+', '(', ')', '/', ',', '#'"
        " (no space at either end)",
    ),
}


@functools.cache
def _compiled(kind: str) -> re.Pattern[str]:
    return re.compile(_SETS[kind][0])


def _describe(ch: str) -> str:
    """What an offending character is, in words (never the raw character: it may be invisible or reorder text)."""
    import unicodedata

    code = f"U+{ord(ch):04X}"
    category = unicodedata.category(ch)
    if category == "Cc":
        return f"a control character ({code})"
    if ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c":
        return f"a bidirectional control ({code})"
    if ch in "\u200b\u200c\u200d\u2060\ufeff\u00ad":
        return f"a zero-width character ({code})"
    if category == "Cs":
        return f"a lone surrogate ({code})"
    if category.startswith("Z"):
        return f"a non-ASCII space ({code})"
    name = unicodedata.name(ch, "")
    return f"the character {code}" + (f" {name}" if name else "")


def identifier_problem(kind: str, value: str) -> str | None:
    """Why `value` is not a valid identifier of `kind` (a key of the table above), or None when it is."""
    pattern = _compiled(kind)
    if pattern.fullmatch(value):
        return None
    _, described = _SETS[kind]
    for ch in value:
        if not (ch.isascii() and ch.isprintable()):
            import unicodedata

            plain = unicodedata.normalize("NFKC", value)
            if plain != value and plain.isascii() and pattern.fullmatch(plain):
                return f"{kind} must be plain ASCII: use {plain!r} (it has look-alike characters: {_describe(ch)})"
            return f"{kind} contains {_describe(ch)}; allowed: {described}"
    return f"{kind} must be {described}"


_KIND_OF_PATTERN = {pattern: kind for kind, (pattern, _) in _SETS.items()}


def pattern_problem(error: Mapping[str, Any]) -> str | None:
    """`identifier_problem` for pydantic's error of a field checked by an identifier's pattern in Rust (`UserId`),
    else None: where errors are turned into messages, such a field reads as the ones checked in Python."""
    if error["type"] != "string_pattern_mismatch":
        return None
    kind = _KIND_OF_PATTERN.get((error.get("ctx") or {}).get("pattern", ""))
    value = error.get("input")
    return identifier_problem(kind, value) if kind is not None and isinstance(value, str) else None


def _checker(kind: str) -> AfterValidator:
    def check(value: str) -> str:
        if _compiled(kind).fullmatch(value) is not None:  # the common case, without describing anything
            return value
        problem = identifier_problem(kind, value)
        if problem is not None:
            raise PydanticCustomError("identifier", "{problem}", {"problem": problem})
        return value

    return AfterValidator(check)


class _Pattern:
    """Annotated metadata putting the set's `pattern` into the JSON schema (the check itself is `_checker`'s).

    A plain class, not pydantic's `WithJsonSchema`: that one hashes its schema whenever `Annotated` is built,
    which cost ~1 ms of import time on every CLI call."""

    __slots__ = ("pattern",)

    def __init__(self, kind: str) -> None:
        self.pattern = _SETS[kind][0]

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema["pattern"] = self.pattern
        return schema


TemplateId = Annotated[str, Field(max_length=255), _checker("template id"), _Pattern("template id")]
"""A template identifier."""
RoleName = Annotated[str, Field(max_length=64), _checker("role name"), _Pattern("role name")]
"""A role name (also a constraint's `groupId`)."""
UserId = Annotated[str, Field(max_length=256, pattern=USER_ID_PATTERN)]
"""A user identifier, its pattern matched in Rust (no Python call from the validation: a subject check's input
names one); `pattern_problem` gives its error the message the kinds checked in Python give."""
ConstraintId = Annotated[str, Field(max_length=128), _checker("constraint id"), _Pattern("constraint id")]
"""A permission constraint's identifier."""
ApiKeyName = Annotated[str, Field(max_length=128), _checker("API key name"), _Pattern("API key name")]
"""An API key's display name (unique per user)."""
