"""Cyclomatic complexity stays where a reader can follow it.

radon's McCabe count per function and method over our own packages; no function above 15.
A function that grows past it is split into named steps rather than raising the bound.
"""

from __future__ import annotations

import ast
from pathlib import Path

from radon.complexity import cc_visit_ast
from radon.visitors import Class, Function

from tests.support.sources import parse, trees_of

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pluginsdk", "backends")
LIMIT = 15


def _functions(tree: ast.Module) -> list[Function]:
    """Functions and methods (radon lists a class's methods beside the class itself)."""
    return [block for block in cc_visit_ast(tree) if not isinstance(block, Class)]


def test_no_function_above_the_limit() -> None:
    paths = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    too_complex = [
        f"{path.relative_to(ROOT)}:{fn.lineno} {fn.fullname} ({fn.complexity})"
        for path, tree in zip(paths, trees_of(paths), strict=True)
        for fn in _functions(tree)
        if fn.complexity > LIMIT
    ]
    assert not too_complex, "split into named steps:\n" + "\n".join(too_complex)


def test_the_check_sees_a_complex_function() -> None:
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(LIMIT + 1))
    (fn,) = _functions(parse(f"def f(x):\n{branches}\n    return -1\n"))
    assert fn.complexity > LIMIT
