"""The exception tree and the one error envelope every interface speaks.

```
SDKError                         INTERNAL_ERROR            500
├── ConfigurationError           CONFIGURATION_ERROR       500  misuse: bad config value
├── HandlerDiscoveryError        CONFIGURATION_ERROR       500  misuse: no handler / backend / provider
├── MethodExecutionError         INTERNAL_ERROR            500  a handler failed unexpectedly
├── ProviderError                PROVIDER_ERROR            502  the cloud said no
├── ValidationError              VALIDATION_ERROR          400  the caller's input is wrong
│   ├── InvalidTemplateError     INVALID_TEMPLATE          400
│   ├── InvalidPaginationToken   INVALID_PAGINATION_TOKEN  400
│   └── StateConflictError       VALIDATION_ERROR          409  illegal state transition
│       └── RevisionNotReachedError  REVISION_NOT_REACHED  409  the policy is behind `at_least_revision`
├── NotFoundError                <ENTITY>_NOT_FOUND        404  (after authorization)
├── AlreadyExistsError           ALREADY_EXISTS            409
├── AuthenticationError          UNAUTHENTICATED           401
├── PermissionDeniedError        FORBIDDEN                 403
├── TooManyRequestsError         TOO_MANY_REQUESTS         429  throttled: try again after `retry_after` s
└── APIConnectionError           CONNECTION_ERROR          —    remote backend: no answer from the server
    └── APITimeoutError          TIMEOUT                   —    remote backend: the server did not answer in time
```

The last two are raised by the remote client, never by a server: the call may or may not have run.

The server renders `to_envelope()`, the remote backend rebuilds the same class
with `from_envelope()`, the CLI exits non-zero printing the envelope, and MCP
reports the class name. Messages never carry secrets.

Every error is small and clean whatever raised it (`_clean`): the message is
clipped to `MAX_MESSAGE_CHARS`, text in `details` to `MAX_DETAIL_CHARS`, lists
and mappings in it to a few entries; text is valid UTF-8 and numbers are JSON
numbers; and the `value` of a field whose name suggests a secret (password,
secret, token, key, code, otp, ...) is replaced by `"***"`.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AlreadyExistsError",
    "AuthenticationError",
    "ConfigurationError",
    "HandlerDiscoveryError",
    "InvalidPaginationToken",
    "InvalidTemplateError",
    "MethodExecutionError",
    "NotFoundError",
    "PermissionDeniedError",
    "ProviderError",
    "RevisionNotReachedError",
    "SDKError",
    "StateConflictError",
    "TooManyRequestsError",
    "ValidationError",
    "clean_details",
    "error_from_envelope",
    "is_secret_field",
]

MAX_MESSAGE_CHARS = 1000
"""Longest error message; a longer one (it quotes some huge input) is clipped."""
MAX_DETAIL_CHARS = 200
"""Longest text anywhere in `details` (`details.value` above all)."""
_MAX_ITEMS = 50
_MAX_DEPTH = 4
_REDACTED = "***"
_SECRET_WORDS = frozenset(
    {
        "password", "passwd", "passphrase", "pwd", "secret", "token", "key", "apikey", "otp", "totp", "code",
        "pin", "credential", "credentials", "authorization", "cookie", "signature", "hash", "salt", "seed",
    }
)  # fmt: skip
_NAMING_WORDS = frozenset({"id", "ids", "name", "names", "type", "types", "use", "expiry", "expires"})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def is_secret_field(field: Any) -> bool:
    """Whether a field's name suggests a secret: its last path segment has a word like password, secret,
    token, key, code or otp, and does not end in a naming word (`api_key_id`, `key_name`, `token_use` name
    things, they are not secrets)."""
    if not isinstance(field, str) or not field:
        return False
    names = [p for p in re.split(r"[.\[\]]", field) if p and not p.isdigit()]  # `password.0` is the password's
    last = names[-1] if names else field
    words = [w.lower() for w in _WORD.findall(last)]
    if not words or words[-1] in _NAMING_WORDS:
        return False
    joined = "".join(words)
    return any(w in _SECRET_WORDS for w in words) or any(s in joined for s in ("password", "secret", "apikey"))


_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)
"""Characters shown escaped in errors: controls (ANSI escapes included; newline and tab kept), bidi controls,
zero-width characters and lone surrogates. An error quoting input can neither reorder nor hide text in a
terminal or log, nor break a UTF-8 encoder."""


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _clip(text: str, limit: int, *, keep_lines: bool = True) -> str:
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    text = _UNSAFE.sub(_escape, text)
    return text if keep_lines else text.replace("\n", "\\n").replace("\t", "\\t")


def _clean(value: Any, depth: int = 0) -> Any:
    """A JSON-ready, bounded copy of a detail value."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _clip(value, MAX_DETAIL_CHARS, keep_lines=False)
    if isinstance(value, int):
        return value if abs(value) < 2**63 else f"<integer of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth >= _MAX_DEPTH:
        return "..."
    if isinstance(value, dict):
        items = list(value.items())
        out = {_clip(str(k), MAX_DETAIL_CHARS, keep_lines=False): _clean(v, depth + 1) for k, v in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            out["..."] = f"{len(items) - _MAX_ITEMS} more entries"
        return out
    if isinstance(value, list | tuple | set | frozenset):
        seq = list(value)
        cleaned = [_clean(v, depth + 1) for v in seq[:_MAX_ITEMS]]
        if len(seq) > _MAX_ITEMS:
            cleaned.append(f"... {len(seq) - _MAX_ITEMS} more")
        return cleaned
    return _clip(type(value).__name__, MAX_DETAIL_CHARS)


def clean_details(details: dict[str, Any]) -> dict[str, Any]:
    """`details` made small and JSON-safe, with a secret field's value redacted."""
    out = _clean(details)
    if not isinstance(out, dict):
        return {}
    if "value" in out and out["value"] is not None and is_secret_field(details.get("field")):
        out["value"] = _REDACTED
    for entry in out.get("errors") or ():
        if isinstance(entry, dict) and "value" in entry and is_secret_field(entry.get("field")):
            entry["value"] = _REDACTED
    return out


#: entity_type -> specific not-found code of the provisioning spec.
_NOT_FOUND_CODES = {
    "template": "TEMPLATE_NOT_FOUND",
    "request": "REQUEST_NOT_FOUND",
    "machine": "MACHINE_NOT_FOUND",
}


class SDKError(Exception):
    """Base of every error pluginsdk raises on purpose."""

    error_code: str = "INTERNAL_ERROR"
    """The envelope's `error_code` (an instance may refine it, e.g. TEMPLATE_NOT_FOUND)."""
    http_status: ClassVar[int] = 500

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        message = _clip(str(message), MAX_MESSAGE_CHARS)
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = clean_details(details) if details else {}
        self.request_id = request_id

    @property
    def code(self) -> str:
        return self.error_code

    @property
    def status(self) -> int:
        return self.http_status

    def to_envelope(self) -> dict[str, Any]:
        """The one error body: success, error, error_code, details."""
        return {
            "success": False,
            "error": self.message,
            "error_code": self.code,
            "details": self.details,
        }

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, error_code={self.code!r})"


class ConfigurationError(SDKError):
    """A configuration value is missing or wrong; the message names the key and its source."""

    error_code = "CONFIGURATION_ERROR"

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None, **kw: Any) -> None:
        details = kw.pop("details", None) or {}
        if key is not None:
            details.setdefault("field", key)
        if source is not None:
            details.setdefault("source", source)
        super().__init__(message, details=details, **kw)
        self.key = key
        self.source = source


class HandlerDiscoveryError(SDKError):
    """No handler, backend or provider is registered under the name asked for."""

    error_code = "CONFIGURATION_ERROR"


class MethodExecutionError(SDKError):
    """A handler failed in a way it did not anticipate; the cause is chained."""


class ProviderError(SDKError):
    """The cloud provider refused or failed an operation (`details.provider_code` has its code)."""

    error_code = "PROVIDER_ERROR"
    http_status = 502


class ValidationError(SDKError, ValueError):
    """The caller's input is invalid; `details` has field, value and expected."""

    error_code = "VALIDATION_ERROR"
    http_status = 400


class InvalidTemplateError(ValidationError):
    """A template configuration does not validate."""

    error_code = "INVALID_TEMPLATE"


class InvalidPaginationToken(ValidationError):
    """A page token that this listing did not emit."""

    error_code = "INVALID_PAGINATION_TOKEN"

    def __init__(self, message: str = "Invalid pagination token", **kw: Any) -> None:
        super().__init__(message, **kw)


class StateConflictError(ValidationError):
    """The entity's current state does not allow the operation (an illegal transition)."""

    http_status = 409


class RevisionNotReachedError(StateConflictError):
    """The policy store is behind the `at_least_revision` a decision-point call asked for (another process has
    not committed that write yet, or the revision was never written): ask again, or later."""

    error_code = "REVISION_NOT_REACHED"


class NotFoundError(SDKError, LookupError):
    """The entity does not exist (raised only after authorization allowed the call)."""

    error_code = "NOT_FOUND"
    http_status = 404

    def __init__(self, entity_type: str, entity_id: str, message: str | None = None, **kw: Any) -> None:
        details = kw.pop("details", None) or {"field": f"{entity_type}_id", "value": entity_id}
        super().__init__(message or f"{entity_type.capitalize()} '{entity_id}' not found.", details=details, **kw)
        self.entity_type = entity_type
        self.entity_id = entity_id
        self.error_code = _NOT_FOUND_CODES.get(entity_type, "NOT_FOUND")


class AlreadyExistsError(SDKError):
    """An entity with that identity exists already."""

    error_code = "ALREADY_EXISTS"
    http_status = 409

    def __init__(self, entity_type: str, entity_id: str, message: str | None = None, **kw: Any) -> None:
        details = kw.pop("details", None) or {"field": f"{entity_type}_id", "value": entity_id}
        super().__init__(message or f"{entity_type.capitalize()} '{entity_id}' already exists.", details=details, **kw)
        self.entity_type = entity_type
        self.entity_id = entity_id


class AuthenticationError(SDKError):
    """No credentials, or credentials that are unknown, expired or deactivated."""

    error_code = "UNAUTHENTICATED"
    http_status = 401


class PermissionDeniedError(SDKError):
    """Authenticated, but a tier-1 (route) or tier-2 (object) check denies."""

    error_code = "FORBIDDEN"
    http_status = 403


class TooManyRequestsError(SDKError):
    """Refused for now, not for good: too many failed sign-ins, or the server's password hashing is saturated.

    `details.retry_after` (and the HTTP `Retry-After` header) says after how many seconds to try again."""

    error_code = "TOO_MANY_REQUESTS"
    http_status = 429

    @property
    def retry_after(self) -> int:
        value = self.details.get("retry_after", 1)
        return max(int(value), 1) if isinstance(value, int | float) and math.isfinite(value) else 1


class APIConnectionError(SDKError):
    """The remote backend could not reach the server, or the connection broke before an answer came.

    Not a server error: no envelope came back, so a command may or may not have run (retry a command
    with the same `request_id` to be safe; the remote backend does that itself for the commands that
    carry one). `details` has the `url` and the transport's `reason`."""

    error_code = "CONNECTION_ERROR"
    http_status = 503


class APITimeoutError(APIConnectionError):
    """The server did not answer within the configured timeout (`api.read_timeout` and the other phases)."""

    error_code = "TIMEOUT"
    http_status = 504


_BY_CODE: dict[str, type[SDKError]] = {
    "INTERNAL_ERROR": MethodExecutionError,
    "CONFIGURATION_ERROR": ConfigurationError,
    "PROVIDER_ERROR": ProviderError,
    "VALIDATION_ERROR": ValidationError,
    "INVALID_TEMPLATE": InvalidTemplateError,
    "INVALID_PAGINATION_TOKEN": InvalidPaginationToken,
    "ALREADY_EXISTS": AlreadyExistsError,
    "UNAUTHENTICATED": AuthenticationError,
    "FORBIDDEN": PermissionDeniedError,
    "REVISION_NOT_REACHED": RevisionNotReachedError,
    "TOO_MANY_REQUESTS": TooManyRequestsError,
}


def error_from_envelope(body: Any, status: int, request_id: str | None = None) -> SDKError:
    """Rebuild the exception a server raised from its envelope and HTTP status."""
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("error") or body.get("message") or f"HTTP {status}")
    code = str(body.get("error_code") or "")
    details = body.get("details") if isinstance(body.get("details"), dict) else {}
    if code.endswith("NOT_FOUND") or (not code and status == 404):
        entity = {v: k for k, v in _NOT_FOUND_CODES.items()}.get(code, str(details.get("entity_type", "entity")))
        return NotFoundError(entity, str(details.get("value", "")), message, details=details, request_id=request_id)
    if code == "ALREADY_EXISTS":
        field = str(details.get("field", "entity_id"))
        return AlreadyExistsError(
            field.removesuffix("_id"), str(details.get("value", "")), message, details=details, request_id=request_id
        )
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = {400: ValidationError, 401: AuthenticationError, 403: PermissionDeniedError, 409: StateConflictError}.get(
            status, MethodExecutionError
        )
    if cls is ValidationError and status == 409:
        cls = StateConflictError
    err = cls(message, details=details, request_id=request_id)
    return err
