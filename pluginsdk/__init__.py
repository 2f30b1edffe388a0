"""pluginsdk: provision compute machines from templates and authorize callers.

`PluginSDK` is the entry point; errors, models and operations are importable
from here. Heavy parts load on first use so `import pluginsdk` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .constants import VERSION as __version__
from .errors import (
    AlreadyExistsError,
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    ConfigurationError,
    HandlerDiscoveryError,
    InvalidPaginationToken,
    InvalidTemplateError,
    MethodExecutionError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RevisionNotReachedError,
    SDKError,
    StateConflictError,
    TooManyRequestsError,
    ValidationError,
)

if TYPE_CHECKING:
    from .principal import Principal as Principal
    from .sdk import PluginSDK as PluginSDK

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
    "PluginSDK",
    "Principal",
    "ProviderError",
    "RevisionNotReachedError",
    "SDKError",
    "StateConflictError",
    "TooManyRequestsError",
    "ValidationError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name == "PluginSDK":
        from .sdk import PluginSDK

        return PluginSDK
    if name == "Principal":
        from .principal import Principal

        return Principal
    raise AttributeError(f"module 'pluginsdk' has no attribute {name!r}")
