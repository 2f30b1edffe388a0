"""The auth service's policy evaluator: constraints compiled once into per-role indexes.

`CompiledPolicy` answers tier 1 (`route_allowed`) and tier 2 (`is_allowed`, `filter_allowed`).
See docs/policy.md.
"""

from .evaluator import CompiledPolicy, ConstraintSource, compile_policy, read_constraint
from .matching import Pattern, compile_pattern

__all__ = [
    "CompiledPolicy",
    "ConstraintSource",
    "Pattern",
    "compile_pattern",
    "compile_policy",
    "read_constraint",
]
