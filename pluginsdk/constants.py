"""Constants shared by `pluginsdk` and the backends (part of the contract a backend uses: docs/design.md)."""

VERSION = "0.1.0"
"""The package version (`pluginsdk.__version__`, the server's `/health`, the bootstrap answer)."""
DEFAULT_BACKEND = "local"
"""The backend `PluginSDK` uses when neither the caller nor PLUGIN_BACKEND names one."""
REQUEST_ID_PREFIX = "req-"
RETURN_ID_PREFIX = "ret-"
"""Prefixes of provisioning and return request ids."""
API_KEY_PREFIX = "psdk_"
"""Every API key starts with this, so a key in a log or a diff is recognisable."""
KEYRING_SERVICE = "pluginsdk"
"""The OS keyring service under which `pluginsdk login` stores a server's API key and the remote backend
looks it up (the entry's name is the server URL)."""
