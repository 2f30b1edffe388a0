"""The import graph of `pluginsdk` and `backends` has no cycle.

Read from the source (AST), not by importing. Rules:

- A node is a module; a package is its `__init__`.
- An edge is every runtime import: module-level, function-level (lazy) and
  `importlib.import_module` with a literal name (relative names resolved against
  `__package__`/`__name__`). Imports under `if TYPE_CHECKING:` are not runtime and
  are left out. Only targets inside the two packages count.
- `import a.b.c` depends on `a.b.c` only. That Python runs the `__init__` of `a` and
  `a.b` first is how packages work, not a dependency of the importer, so a child
  importing a sibling does not close a loop through its parent's `__init__`.
- `from a.b import x` depends on the submodule `a.b.x` when there is one; otherwise on
  the module that defines `x`: a package `__init__` that re-exports `x` from one of its
  own submodules (`from .sub import x`, at the top or lazily in `__getattr__`) is a
  facade, and the dependency is on `sub`. A name the `__init__` defines itself is a
  dependency on the `__init__`.

So a package whose `__init__` re-exports (eagerly or lazily) its children is not by
itself a cycle; a child that needs something the `__init__` itself defines, while the
`__init__` imports that child, is.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator

from tests.support.sources import Module, our_modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below `node`, skipping the bodies of `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _runtime_nodes(other)
            continue
        yield child
        yield from _runtime_nodes(child)


def _collect_reexports(modules: dict[str, Module]) -> None:
    for module in modules.values():
        if not module.is_package:
            continue
        for node in _runtime_nodes(module.tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                source = module.absolute(node.module, node.level)
                if source.startswith(module.name + ".") and source in modules:
                    for alias in node.names:
                        module.reexports[alias.asname or alias.name] = source


def _resolve_name(modules: dict[str, Module], base: str, name: str) -> str:
    """The module `from base import name` depends on (see the module docstring)."""
    if f"{base}.{name}" in modules:
        return f"{base}.{name}"
    seen: set[str] = set()
    while base in modules and name in modules[base].reexports and base not in seen:
        seen.add(base)
        base = modules[base].reexports[name]
        if f"{base}.{name}" in modules:
            return f"{base}.{name}"
    return base


def _edges(modules: dict[str, Module], module: Module) -> Iterator[tuple[str, int]]:
    for node in _runtime_nodes(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = module.absolute(node.module, node.level)
            for alias in node.names:
                yield _resolve_name(modules, base, alias.name), node.lineno
        elif isinstance(node, ast.Call):
            target = module.import_module_target(node)
            if target is not None:
                yield target, node.lineno


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {imported module of ours: first line importing it}."""
    modules = our_modules()
    _collect_reexports(modules)
    graph: dict[str, dict[str, int]] = {}
    for module in modules.values():
        out = graph.setdefault(module.name, {})
        for target, line in _edges(modules, module):
            if target in modules and target != module.name:
                out.setdefault(target, line)
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One concrete cycle per strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan; the graph is a few hundred modules
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_one_cycle(graph, component) for component in components]


def _one_cycle(graph: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node]):
            if nxt == start:
                return paths[node] + [start]
            if nxt in component and nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - a component always has one


def _describe(graph: dict[str, dict[str, int]], cycle: list[str]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle)) + f" -> {cycle[0]}"


def test_no_import_cycle() -> None:
    graph = import_graph()
    cycles = [_describe(graph, cycle) for cycle in _cycles(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_walk_sees_lazy_and_importlib_imports() -> None:
    """The rules above, on the repository itself: a walk that missed these would pass vacuously."""
    graph = import_graph()
    assert "pluginsdk.cli" in graph["pluginsdk._entry"]  # a function-level import
    assert "backends.local.auth" in graph["backends.local.engine"]  # importlib.import_module with a literal
    assert "pluginsdk.sdk" in graph["pluginsdk"]  # a lazy re-export in __getattr__
    assert "pluginsdk.errors" in graph["pluginsdk.sdk"]  # `from .errors import ...`
    assert "backends.local.engine" not in graph["backends.local.auth"]  # TYPE_CHECKING only


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b": 3}, "b": {"c": 5}, "c": {"a": 7}, "d": {"a": 1}}
    (cycle,) = _cycles(graph)
    assert _describe(graph, cycle) == "a (line 3) -> b (line 5) -> c (line 7) -> a"
