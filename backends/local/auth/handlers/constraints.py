"""Handlers: constraints (placeholder)."""
