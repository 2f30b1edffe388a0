"""Cold start in one place: where each lazily loaded name lives, and the tricks that keep a call's imports small.

A scheduler runs the CLI many times a minute, so a call imports and builds only what it uses (measured in
docs/benchmarks.md, "CLI cold start"). Everything that makes that so is here, reading one generated index
(`pluginsdk/_index.py`, written by `python -m pluginsdk._stubgen`; never edited by hand):

- the index's tables, read through this module only: `MODELS` (name -> submodule of `pluginsdk.models`),
  `OPERATIONS` (SDK name -> operation module), `CLASSES` (operation class -> module), `GROUPS` (CLI group ->
  action -> summary) and `COMMANDS` ("group action" -> SDK name);
- `exports`: the PEP 562 `__getattr__` of the packages that export lazily (`pluginsdk.models`,
  `pluginsdk.operations`); `operation_module`, the module `CATALOG[name]` imports;
- `Typed`, `Returning`, `declared_result`: `Query[Result]` without `typing.Generic` at run time;
- `class_field_docs`, `apply_field_docs`: field docstrings read from source, once per module, instead of
  pydantic's `use_attribute_docstrings`.

Two pieces stay where they act and use the catalog this module indexes: `PluginSDK`'s methods are made on
first lookup by its metaclass (`pluginsdk/sdk.py`, `install_method`), and the local engine names its handler
modules in one table (`backends/local/engine.py`, `HANDLER_MODULES`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._index import CLASSES, COMMANDS, GROUPS, MODELS, OPERATIONS

__all__ = [
    "CLASSES",
    "COMMANDS",
    "GROUPS",
    "MODELS",
    "OPERATIONS",
    "Returning",
    "Typed",
    "apply_field_docs",
    "class_field_docs",
    "declared_result",
    "exports",
    "operation_module",
]


# -- lazy exports ---------------------------------------------------------------------------------------------
def exports(
    package: str,
    table: Mapping[str, str],
    namespace: dict[str, Any],
    otherwise: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """The PEP 562 `__getattr__` of `package`: a name `table` lists is imported from that submodule on first
    use and kept in `namespace` (the package's globals); any other name goes to `otherwise`, else is an
    AttributeError. Type checkers read the package's star imports under `TYPE_CHECKING` instead."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            if otherwise is not None:
                return otherwise(name)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    return __getattr__


def operation_module(name: str) -> str | None:
    """The module (absolute) that defines the operation with SDK name `name`, or None if the index lacks it."""
    module = OPERATIONS.get(name)
    return None if module is None else f"{__package__}.operations.{module}"


# -- `Query[Result]` without Generic ----------------------------------------------------------------------------
if TYPE_CHECKING:
    from typing import Generic as Typed
else:

    class Typed:
        """`Generic` for type checkers only. At run time a real `Generic` would make pydantic create a
        parametrized model class for every `Query[X]` (~1 ms each, on every CLI call); instead
        `Operation.__class_getitem__` records X as the class's `result_type`. `Typed[R_co]` is `object`, so
        no class is added to an operation's MRO (pydantic walks it for every class it creates)."""

        def __class_getitem__(cls, _: object) -> type:
            return object


class Returning:
    """`Query[TemplateList]` at run time: subclassing it subclasses `Query`; the class keeps `TemplateList`
    (read back from `__orig_bases__` when the class is created)."""

    __slots__ = ("base", "result")

    def __init__(self, base: type, result: object) -> None:
        self.base = base
        self.result = result

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type]:
        return (self.base,)


def declared_result(cls: type) -> type | None:
    """The result type `cls` names in its bases (`Query[TemplateList]`), or None (a generic step such as
    `_ListKeys(Query[R_co])`, or a class that inherits its result type)."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        if isinstance(base, Returning) and isinstance(base.result, type):
            return base.result
    return None


# -- field docstrings from source -------------------------------------------------------------------------------
# pydantic's `use_attribute_docstrings` costs ~2 ms a class (it inspects frames and re-parses source per class:
# 300 ms of import for the catalog); one `ast` parse per module gives the same text for a fraction, and only
# when help or a schema is asked for (`ast` and `inspect` load then, not on a plain call).
@functools.cache
def _module_docs(module: str) -> dict[str, dict[str, str]]:
    """class name -> field name -> docstring, for every class of a module."""
    import ast
    import inspect
    import itertools
    import sys

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
        for stmt, nxt in itertools.pairwise(node.body):
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
