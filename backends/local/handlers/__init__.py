"""Provisioning handlers, one module per operation group, named like the operation module it serves.

They load on first use (`backends.local.engine.load_handler`), so a CLI call imports only its own.
"""
