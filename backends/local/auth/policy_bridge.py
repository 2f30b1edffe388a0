"""Thin adapter between the auth service and the policy evaluator in `backends/local/policy/`.

PLACEHOLDER until the evaluator lands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pluginsdk.principal import Principal

__all__ = ["CompiledPolicy", "compile_policy", "object_fields", "object_types"]


class CompiledPolicy(Protocol):
    def route_allowed(self, principal: Principal, path: str, method: str) -> bool: ...

    def is_allowed(self, principal: Principal, object_type: str, attrs: Mapping[str, Any], method: str) -> bool: ...

    def filter_allowed(
        self, principal: Principal, object_type: str, objects: Sequence[Mapping[str, Any]], method: str
    ) -> list[bool]: ...


class _PermitAllPlaceholder:  # TEMPORARY: never committed; the real evaluator replaces it
    def route_allowed(self, principal: Principal, path: str, method: str) -> bool:
        return True

    def is_allowed(self, principal: Principal, object_type: str, attrs: Mapping[str, Any], method: str) -> bool:
        return True

    def filter_allowed(
        self, principal: Principal, object_type: str, objects: Sequence[Mapping[str, Any]], method: str
    ) -> list[bool]:
        return [True] * len(objects)


def compile_policy(constraints: list[dict[str, Any]], roles: Mapping[str, bool]) -> CompiledPolicy:
    return _PermitAllPlaceholder()


def _table() -> dict[str, tuple[str, ...]]:
    from .defaults import ADMIN_ONLY_TYPES, DATA_TYPES

    return {**DATA_TYPES, **ADMIN_ONLY_TYPES}


def object_types() -> tuple[str, ...]:
    return tuple(_table())


def object_fields(object_type: str) -> tuple[str, ...]:
    return _table().get(object_type, ())


def evaluator_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("backends.local.policy.evaluator") is not None
