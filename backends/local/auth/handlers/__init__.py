"""Importing this package registers the handlers of every auth-service operation."""

from . import api_keys, bootstrap, constraints, roles, routes, sessions, users

__all__ = ["api_keys", "bootstrap", "constraints", "roles", "routes", "sessions", "users"]
