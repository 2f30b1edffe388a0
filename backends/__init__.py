"""Backends that execute pluginsdk operations: `local` (in-process engine) and `remote` (HTTP client)."""
