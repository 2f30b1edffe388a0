"""The auth service's policy evaluator: constraints compiled once into per-role indexes.

`CompiledPolicy` answers tier 1 (`route_allowed`) and tier 2 (`is_allowed`, `filter_allowed`);
`ReferencePolicy` states the same rules by brute force for the tests. See docs/policy.md.
"""

from typing import TYPE_CHECKING, Any

from .evaluator import CompiledPolicy, ConstraintSource, compile_policy, read_constraint
from .matching import Pattern, compile_pattern

if TYPE_CHECKING:
    from .reference import ReferencePolicy, wildcard_match

__all__ = [
    "CompiledPolicy",
    "ConstraintSource",
    "Pattern",
    "ReferencePolicy",
    "compile_pattern",
    "compile_policy",
    "read_constraint",
    "wildcard_match",
]


def __getattr__(name: str) -> Any:
    """The reference evaluator loads on first use: only tests and benchmarks ask for it."""
    if name in ("ReferencePolicy", "wildcard_match"):
        from . import reference

        return getattr(reference, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
