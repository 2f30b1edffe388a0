"""Defaults in one place."""

VERSION = "0.1.0"
DEFAULT_BACKEND = "local"
REQUEST_ID_PREFIX = "req-"
RETURN_ID_PREFIX = "ret-"
API_KEY_PREFIX = "psdk_"
"""Every API key starts with this, so a key in a log or a diff is recognisable."""
KEYRING_SERVICE = "pluginsdk"
"""The OS keyring service under which `pluginsdk login` stores a server's API key and the remote backend
looks it up (the entry's name is the server URL)."""
