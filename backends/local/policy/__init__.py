"""The auth service's policy evaluator: constraints compiled once into per-role indexes.

`CompiledPolicy` answers tier 1 (`route_allowed`) and tier 2 (`is_allowed`, `filter_allowed`);
`ReferencePolicy` states the same rules by brute force for the tests. See docs/policy.md.
"""

from .evaluator import CompiledPolicy, ConstraintSource, compile_policy, read_constraint
from .matching import Pattern, compile_pattern
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
