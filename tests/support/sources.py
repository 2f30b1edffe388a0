"""Our own source read as syntax trees: every module of `pluginsdk` and `backends`, and the imports in it.

Shared by the structural tests (the import graph, the fence on dependency internals); nothing is imported.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pluginsdk", "backends")


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    reexports: dict[str, str] = field(default_factory=dict)
    """Name -> the submodule (absolute) an `__init__` takes it from."""

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def absolute(self, name: str | None, level: int) -> str:
        """The absolute module of `from <level dots><name> import ...` written here."""
        if level == 0:
            return name or ""
        base = self.package.split(".")
        base = base[: len(base) - (level - 1)]
        return ".".join([*base, name] if name else base)

    def import_module_target(self, call: ast.Call) -> str | None:
        """The absolute target of `importlib.import_module("literal"[, __package__])` here, else None."""
        func = call.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called != "import_module" or not call.args:
            return None
        first = call.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return None
        target = first.value
        level = len(target) - len(target.lstrip("."))
        return self.absolute(target.lstrip(".") or None, level) if level else target


@functools.cache
def our_modules() -> dict[str, Module]:
    """Every module of the two packages by dotted name (a package under its own name); parsed once per test
    session (the structural tests only read it; a re-export table filled in is the same on every fill)."""
    found: dict[str, Module] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join(parts)
            found[name] = Module(name, path, is_package, ast.parse(path.read_text(), str(path)))
    return found
