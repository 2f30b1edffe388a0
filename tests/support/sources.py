"""Our own source read as syntax trees: every module of `pluginsdk` and `backends`, and the imports in it.

Shared by the structural tests (the import graph, the fences, complexity, SQL in the stores); nothing is imported.
Every tree a test reads comes from `parsed`, which parses in a child interpreter (its docstring says why).
"""

from __future__ import annotations

import ast
import functools
import pickle
import subprocess
import sys
from collections.abc import Iterable, Mapping
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


_PARSE = (
    "import ast, pickle, sys\n"
    "sources = pickle.load(sys.stdin.buffer)\n"
    "trees = {name: ast.parse(text, name) for name, text in sources.items()}\n"
    "pickle.dump(trees, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)\n"
)


def parsed(sources: Mapping[str, str]) -> dict[str, ast.Module]:
    """The syntax tree of each source (file name -> text), parsed in a child interpreter.

    CPython 3.11 keeps the AST converter's recursion depth in one counter per interpreter, shared by its threads:
    a parse here while another thread of the test process parses too (a thread a server test left running that
    prints a traceback parses the failing line; Hypothesis and pydantic parse as well) fails with "AST constructor
    recursion depth mismatch". The child has no other thread, and unpickling its trees builds the nodes without
    that counter.
    """
    run = subprocess.run(
        [sys.executable, "-c", _PARSE], input=pickle.dumps(dict(sources)), capture_output=True, check=False
    )
    if run.returncode:
        raise SyntaxError(run.stderr.decode(errors="replace").strip().splitlines()[-1])
    trees: dict[str, ast.Module] = pickle.loads(run.stdout)
    return trees


def parse(source: str, name: str = "<test>") -> ast.Module:
    """The syntax tree of one text (`parsed`, for a snippet a test writes)."""
    return parsed({name: source})[name]


_TREES: dict[Path, ast.Module] = {}


def trees_of(paths: Iterable[Path]) -> list[ast.Module]:
    """The syntax tree of each file, in order; each file parsed once per test process (`parsed`)."""
    paths = list(paths)
    missing = {str(p): p.read_text(encoding="utf-8") for p in paths if p not in _TREES}
    if missing:
        _TREES.update((Path(name), tree) for name, tree in parsed(missing).items())
    return [_TREES[p] for p in paths]


@functools.cache
def our_modules() -> dict[str, Module]:
    """Every module of the two packages by dotted name (a package under its own name); parsed once per test
    session (the structural tests only read it; a re-export table filled in is the same on every fill)."""
    found: dict[str, Module] = {}
    paths = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    for path, tree in zip(paths, trees_of(paths), strict=True):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        found[name] = Module(name, path, is_package, tree)
    return found
