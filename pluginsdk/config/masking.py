"""What is never shown: the SECRET marker a field carries, and the credentials inside any text (URL and DSN
passwords). Used wherever configuration or a wrong value of it is shown (`Settings.redacted`, errors, reprs)."""

from __future__ import annotations

import re

__all__ = ["SECRET", "mask_credentials"]


class _Secret:
    """Marker of a configuration field whose value is a secret (`Annotated[str | None, SECRET]`)."""

    def __repr__(self) -> str:
        return "SECRET"


SECRET = _Secret()
"""Put in a field's `Annotated[...]`: the value is shown as `***` wherever the configuration is shown."""


_CREDENTIALS = (
    re.compile(r"(?P<keep>[A-Za-z][A-Za-z0-9+.\-]*://[^:@/\s?#]*:)[^@\s]*(?=@)"),  # scheme://user:PASSWORD@
    re.compile(r"(?i)(?P<keep>\b(?:password|passwd|pwd|sslpassword)\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&;]*)"),
)
"""A URL's userinfo password, and a DSN's or query string's `password=` part (libpq's keywords)."""


def mask_credentials(text: str) -> str:
    """`text` with the passwords of URLs (`scheme://user:***@host`) and DSNs (`password=***`) masked."""
    for pattern in _CREDENTIALS:
        text = pattern.sub(lambda m: m.group("keep") + "***", text)
    return text
