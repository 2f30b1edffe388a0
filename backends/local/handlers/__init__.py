"""Importing this package registers every provisioning handler with the engine."""

from . import machines, requests, system, templates

__all__ = ["machines", "requests", "system", "templates"]
