"""Field docstrings (the string literal under a field) read from source, once per module.

pydantic's `use_attribute_docstrings` costs ~2 ms a class (it inspects frames and re-parses source per
class: 300 ms of import for the catalog); one `ast` parse per module gives the same text for a fraction.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import sys
from typing import Any

__all__ = ["apply_field_docs", "class_field_docs"]


@functools.cache
def _module_docs(module: str) -> dict[str, dict[str, str]]:
    """class name -> field name -> docstring, for every class of a module."""
    mod = sys.modules.get(module)
    try:
        source = inspect.getsource(mod) if mod is not None else ""
    except (OSError, TypeError):
        return {}
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        docs: dict[str, str] = {}
        body = node.body
        for stmt, nxt in itertools.pairwise(body):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(nxt.value.value)
        out[node.name] = docs
    return out


def class_field_docs(cls: type[Any]) -> dict[str, str]:
    """Docstrings of a class's fields, inherited ones included (nearest class wins)."""
    docs: dict[str, str] = {}
    fields = set(getattr(cls, "model_fields", None) or ())
    for klass in reversed(cls.__mro__):
        own = set(vars(klass).get("__annotations__", ()))
        if fields and not own & fields:
            continue  # declares none of the fields: don't parse its module (pydantic.main alone is ~50 ms)
        docs.update(_module_docs(klass.__module__).get(klass.__qualname__, {}))
    return docs


def apply_field_docs(cls: type[Any]) -> None:
    """Set FieldInfo.description from docstrings where none was given (before the schema is built)."""
    fields = getattr(cls, "model_fields", {})
    docs = class_field_docs(cls)
    for name, info in fields.items():
        if info.description is None and name in docs:
            info.description = docs[name]
