"""Defaults in one place."""

VERSION = "0.1.0"
DEFAULT_BACKEND = "local"
DEFAULT_TIMEOUT = 30.0
"""Seconds per HTTP call of the remote backend."""
DEFAULT_MAX_RETRIES = 2
REQUEST_ID_PREFIX = "req-"
RETURN_ID_PREFIX = "ret-"
API_KEY_PREFIX = "psdk_"
"""Every API key starts with this, so a key in a log or a diff is recognisable."""
