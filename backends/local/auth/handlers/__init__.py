"""Auth-service handlers, one module per operation group (`sessions` serves `auth_sessions`).

They load on first use (`backends.local.engine.load_handler`), so a CLI call imports only its own.
"""
