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
import re
from collections.abc import Callable, Iterator

from tests.support.sources import ROOT, Module, our_modules, parse


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


# -- the boundary between `pluginsdk` and `backends` --------------------------------------------------------------
# Every import counts here, lazy and `if TYPE_CHECKING:` ones too: a type a backend names is part of what it
# relies on. A backend uses `pluginsdk`'s public modules and names only (docs/design.md, "The contract a backend
# uses"); `pluginsdk` reaches a backend only through the loader, `pluginsdk.backend`.

LOADER = "pluginsdk.backend"
_BACKEND_TARGET = re.compile(r"backends(\.\w+)+(:\w+)?")


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _imports(modules: dict[str, Module], module: Module) -> Iterator[tuple[str, str | None, int]]:
    """(absolute module, name imported from it or None, line) for every import and literal `import_module`."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = module.absolute(node.module, node.level)
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    yield f"{base}.{alias.name}", None, node.lineno
                else:
                    yield base, alias.name, node.lineno
        elif isinstance(node, ast.Call) and (target := module.import_module_target(node)):
            yield target, None, node.lineno


def backend_reaches_private(modules: dict[str, Module], module: Module) -> list[str]:
    """Where a `backends` module imports a private module or name of `pluginsdk`."""
    found = []
    for target, name, line in _imports(modules, module):
        if target.split(".")[0] != "pluginsdk":
            continue
        if any(_private(p) for p in target.split(".")) or (name is not None and _private(name)):
            found.append(f"{module.name} (line {line}) imports {target}{'' if name is None else ' ' + name}")
    return found


def pluginsdk_reaches_backend(modules: dict[str, Module], module: Module) -> list[str]:
    """Where a `pluginsdk` module other than the loader imports or names a module of `backends`."""
    if module.name == LOADER:
        return []
    found = {
        line: f"{module.name} (line {line}) imports {target}"
        for target, _, line in _imports(modules, module)
        if target.split(".")[0] == "backends"
    }
    for node in ast.walk(module.tree):  # a target written as text, e.g. "backends.local:LocalBackend"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _BACKEND_TARGET.fullmatch(node.value):
            found.setdefault(node.lineno, f"{module.name} (line {node.lineno}) names {node.value}")
    return [found[line] for line in sorted(found)]


def private_name_imports(modules: dict[str, Module], module: Module) -> list[str]:
    """Where a module imports a private name (not a private submodule) of another module of ours."""
    return [
        f"{module.name} (line {line}) imports {name} from {target}"
        for target, name, line in _imports(modules, module)
        if name is not None and _private(name) and target in modules
    ]


def _violations(check: Callable[[dict[str, Module], Module], list[str]], package: str) -> list[str]:
    modules = our_modules()
    return [v for m in modules.values() if m.name.split(".")[0] == package for v in check(modules, m)]


def test_backends_use_only_the_public_contract_of_pluginsdk() -> None:
    found = _violations(backend_reaches_private, "backends")
    assert not found, "backends reach into private parts of pluginsdk (make them public and documented):\n" + (
        "\n".join(found)
    )


def test_pluginsdk_reaches_backends_only_through_the_loader() -> None:
    found = _violations(pluginsdk_reaches_backend, "pluginsdk")
    assert not found, f"pluginsdk reaches a backend other than through {LOADER}:\n" + "\n".join(found)


def test_no_private_name_crosses_modules() -> None:
    found = _violations(private_name_imports, "pluginsdk") + _violations(private_name_imports, "backends")
    assert not found, "private names imported from another module (make them public):\n" + "\n".join(found)


def test_the_boundary_scans_see_planted_crossings() -> None:
    """The three scans on modules written here: a scan that saw nothing would pass vacuously."""
    modules = our_modules()

    def planted(name: str, source: str) -> Module:
        return Module(name, ROOT / (name.replace(".", "/") + ".py"), False, parse(source))

    backend = planted(
        "backends.local.example",
        "from typing import TYPE_CHECKING\nfrom pluginsdk import _index, errors\n"
        "from pluginsdk.operations import _base\nfrom pluginsdk.operations._base import CATALOG\n"
        "if TYPE_CHECKING:\n    from pluginsdk.sdk import _spec\ndef f():\n    import pluginsdk.models._base\n",
    )
    assert [v.split(" imports ")[1] for v in backend_reaches_private(modules, backend)] == [
        "pluginsdk._index",
        "pluginsdk.operations._base",
        "pluginsdk.operations._base CATALOG",
        "pluginsdk.sdk _spec",
        "pluginsdk.models._base",
    ]
    interface = planted(
        "pluginsdk.cli.example",
        "import importlib\ndef f():\n    from backends.local.auth import break_glass\n"
        "    importlib.import_module('backends.remote')\nTARGET = 'backends.local:LocalBackend'\n",
    )
    assert len(pluginsdk_reaches_backend(modules, interface)) == 3
    assert pluginsdk_reaches_backend(modules, modules[LOADER]) == []
    crossing = planted("backends.local.policy.example", "from .evaluator import CompiledPolicy, _private_helper\n")
    assert private_name_imports(modules, crossing) == [
        "backends.local.policy.example (line 1) imports _private_helper from backends.local.policy.evaluator"
    ]


def test_only_the_lazy_module_reads_the_index() -> None:
    """Cold-start machinery sits behind `pluginsdk/_lazy.py`: it alone imports the generated index, and the
    packages that export lazily take their `__getattr__` from it (docs/design.md, "Lazy catalog")."""
    modules = our_modules()
    readers = {
        m.name for m in modules.values() for target, _, _ in _imports(modules, m) if target == "pluginsdk._index"
    }
    assert readers == {"pluginsdk._lazy"}
    graph = import_graph()
    for package in ("pluginsdk.models", "pluginsdk.operations"):
        assert "pluginsdk._lazy" in graph[package], package


# -- one-way layers -----------------------------------------------------------------------------------------------
# docs/design.md's picture of the house as an allow-list: every module belongs to a room (a top-level module or
# package of `pluginsdk`, or of `backends/local`), every room to a layer, and a module imports only its own
# layer or the layers below it. Every import counts, lazy and `if TYPE_CHECKING:` ones too (a type named from
# above is a dependency on above). A new module lands in the room of its package; a new room must be placed here.

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "base: errors, principal, constants and the small shared modules",
        frozenset(
            {
                "pluginsdk.constants",
                "pluginsdk.credentials",
                "pluginsdk.errors",
                "pluginsdk.files",
                "pluginsdk.logs",
                "pluginsdk.observe",
                "pluginsdk.principal",
                "pluginsdk.words",
                "pluginsdk._gc",
                "pluginsdk._index",
            }
        ),
    ),
    (
        "contract: the catalog, models, configuration, plans, the wait loop, lazy loading",
        frozenset(
            {
                "pluginsdk.config",
                "pluginsdk.models",
                "pluginsdk.operations",
                "pluginsdk.periodic",
                "pluginsdk.plans",
                "pluginsdk.waiting",
                "pluginsdk._lazy",  # imports the models' and operations' submodules by name
                "pluginsdk._pagination",
            }
        ),
    ),
    (
        "the engine's floor: store, policy evaluator, the call, object attributes, template files",
        frozenset(
            {
                "backends.local.attributes",
                "backends.local.call",
                "backends.local.policy",
                "backends.local.store",
                "backends.local.templates_files",
            }
        ),
    ),
    ("providers and the handler registry", frozenset({"backends.local.providers", "backends.local.registry"})),
    ("what handlers receive", frozenset({"backends.local.deps"})),
    ("the request state machine", frozenset({"backends.local.provisioning"})),
    ("handlers and the auth service", frozenset({"backends.local.handlers", "backends.local.auth"})),
    ("the engine", frozenset({"backends.local.engine"})),
    ("backends", frozenset({"backends", "backends.local", "backends.remote"})),
    ("facade", frozenset({"pluginsdk", "pluginsdk.backend", "pluginsdk.sdk"})),
    (
        "interfaces",
        frozenset(
            {
                "pluginsdk.cli",
                "pluginsdk.mcp",
                "pluginsdk.schedulers",
                "pluginsdk.server",
                "pluginsdk.__main__",
                "pluginsdk._entry",
                "pluginsdk._stubgen",
            }
        ),
    ),
)


def room(name: str) -> str:
    """`backends.local.<x>`, `backends.<x>` or `pluginsdk.<x>` (a package and everything under it)."""
    parts = name.split(".")
    depth = 3 if parts[:2] == ["backends", "local"] else 2
    return ".".join(parts[:depth])


def _rank() -> dict[str, int]:
    return {r: i for i, (_, rooms) in enumerate(LAYERS) for r in rooms}


def layer_violations(modules: dict[str, Module], module: Module) -> list[str]:
    """Where `module` imports a module of a higher layer."""
    rank = _rank()
    mine = rank[room(module.name)]
    found = []
    for target, _, line in _imports(modules, module):
        if target not in modules or room(target) == room(module.name):
            continue
        if rank[room(target)] > mine:
            found.append(
                f"{module.name} (line {line}, {LAYERS[mine][0]!r}) imports {target} ({LAYERS[rank[room(target)]][0]!r})"
            )
    return found


def test_every_module_has_a_room_in_a_layer() -> None:
    rank = _rank()
    unplaced = sorted({room(m) for m in our_modules() if room(m) not in rank})
    assert not unplaced, f"rooms not placed in LAYERS (tests/test_import_graph.py): {unplaced}"


def test_imports_point_down_the_layers() -> None:
    modules = our_modules()
    found = [v for m in modules.values() for v in layer_violations(modules, m)]
    assert not found, "imports against the layers (docs/design.md, 'The house in one picture'):\n" + "\n".join(found)


def test_the_layer_scan_sees_a_planted_upward_import() -> None:
    modules = our_modules()
    store = Module(
        "backends.local.store.example",
        ROOT / "backends/local/store/example.py",
        False,
        parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..auth.crypto import b64e\n"),
    )
    (found,) = layer_violations(modules, store)
    assert found.startswith("backends.local.store.example (line 3,") and "imports backends.local.auth.crypto" in found


def test_the_handler_modules_are_imported_from_above_them() -> None:
    """The engine's registry imports the handler modules `HANDLER_MODULES` names by a computed name, which the
    import scan cannot see: the module that does it sits in a layer at or above every module it names."""
    from backends.local.engine import HANDLER_MODULES, HandlerRegistry

    rank = _rank()
    loader = rank[room(HandlerRegistry.__module__)]
    named = {name for names in HANDLER_MODULES.values() for name in names}
    above = sorted(name for name in named if rank[room(name)] > loader)
    assert named and not above, f"{HandlerRegistry.__module__} imports handler modules above it: {above}"
