"""Constants shared by `pluginsdk` and the backends (part of the contract a backend uses: docs/design.md)."""

VERSION = "0.1.0"
"""The package version (`pluginsdk.__version__`, the server's `/health`, the bootstrap answer)."""
DEFAULT_BACKEND = "local"
"""The backend `PluginSDK` uses when neither the caller nor PLUGIN_BACKEND names one."""
REQUEST_ID_PREFIX = "req-"
RETURN_ID_PREFIX = "ret-"
"""Prefixes of provisioning and return request ids (the operations' `request_id` patterns, `new_request_id`)."""
API_KEY_PREFIX = "psdk_"
"""Every API key starts with this, so a key in a log or a diff is recognisable."""
KEYRING_SERVICE = "pluginsdk"
"""The OS keyring service under which `pluginsdk login` stores a server's API key and the remote backend
looks it up (the entry's name is the server URL)."""


def new_request_id(prefix: str = REQUEST_ID_PREFIX) -> str:
    """A fresh id for a provisioning request (`RETURN_ID_PREFIX`: a return request)."""
    import uuid  # only where an id is made, not on every import of the constants

    return f"{prefix}{uuid.uuid4()}"
