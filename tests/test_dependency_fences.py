"""Dependency internals: none is used unless fenced, and each fence holds.

A private module of a dependency (a `_`-prefixed component, or a package its project documents as
internal) can change in any release. A module of ours may use one only when it is listed in `FENCED`
with the test that fails loudly when the dependency changes it, and with an upper bound on the
dependency in `pyproject.toml`.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator

import pytest

from tests.support.sources import ROOT, Module, our_modules, parse, trees_of

FENCED: dict[tuple[str, str], str] = {
    ("pluginsdk._entry", "pydantic.plugin._loader"): (
        "tests/test_dependency_fences.py::test_pydantic_plugin_loader_is_what_the_stand_in_answers_for"
    ),
    ("pluginsdk.server._protocol", "uvicorn.protocols.http.httptools_impl"): (
        "tests/server/test_door.py::test_stock_protocol_when_uvicorn_changed_a_method_we_override"
    ),
}
"""(our module, the dependency's internal module) -> the fence test."""

INTERNAL_PACKAGES = ("uvicorn.protocols",)
"""Internal to their project although no component of their names starts with `_`."""


def _is_private(dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[0] in ("pluginsdk", "backends") or parts[0] in sys.stdlib_module_names:
        return False
    if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
        return True
    return any(dotted == pkg or dotted.startswith(pkg + ".") for pkg in INTERNAL_PACKAGES)


_DOTTED = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+")


def _names_installed_module(text: str) -> bool:
    return _DOTTED.fullmatch(text) is not None and importlib.util.find_spec(text.partition(".")[0]) is not None


def _named_modules(module: Module) -> Iterator[str]:
    """Every module `module` imports or names: imports (also under TYPE_CHECKING and in functions), literal
    `import_module` targets, `from pkg import _sub`, and dotted string literals (a module planted in
    `sys.modules` is named, not imported)."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_"))
        elif isinstance(node, ast.Call) and (target := module.import_module_target(node)):
            yield target
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _names_installed_module(node.value):
            yield node.value


def _private_uses() -> set[tuple[str, str]]:
    return {
        (module.name, named)
        for module in our_modules().values()
        for named in _named_modules(module)
        if _is_private(named)
    }


def test_no_dependency_internals_without_a_fence() -> None:
    unfenced = sorted(_private_uses() - FENCED.keys())
    assert not unfenced, "dependency internals used without a fence test (add one and list it in FENCED):\n" + (
        "\n".join(f"{ours} uses {theirs}" for ours, theirs in unfenced)
    )


def test_every_fence_is_still_needed_and_exists() -> None:
    used = _private_uses()
    bounds = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*bounds["dependencies"], *(r for extra in bounds["optional-dependencies"].values() for r in extra)]
    for (ours, theirs), fence in FENCED.items():
        assert (ours, theirs) in used, f"{ours} no longer uses {theirs}: drop its FENCED entry"
        path, _, name = fence.partition("::")
        (tree,) = trees_of([ROOT / path])
        assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, f"no fence test {fence}"
        dist = theirs.split(".")[0]
        (req,) = [r for r in requirements if re.match(rf"{dist}(\[[^]]*\])?[<>=!~ ]", r)]
        assert "<" in req, f"{dist} has no upper bound in pyproject.toml ({req!r}), though {ours} uses {theirs}"


def test_the_scan_sees_a_planted_module_and_a_private_import() -> None:
    """The scan on a module written here: a fence test that saw nothing would pass vacuously."""
    module = Module(
        "pluginsdk.example",
        ROOT / "pluginsdk" / "example.py",
        False,
        parse(
            "import types\nfrom pydantic._internal import _core_utils\nfrom pydantic import _migration\n"
            "def f():\n    from pydantic_core import core_schema\n    types.ModuleType('pydantic.plugin._loader')\n"
        ),
    )
    private = {named for named in _named_modules(module) if _is_private(named)}
    assert private == {
        "pydantic._internal",
        "pydantic._internal._core_utils",
        "pydantic._migration",
        "pydantic.plugin._loader",
    }


# -- the pydantic plugin-loader fence --------------------------------------------------------------------------
def test_pydantic_plugin_loader_is_what_the_stand_in_answers_for() -> None:
    """`pluginsdk._entry` plants a `pydantic.plugin._loader` whose `get_plugins()` is `()`. It stays right
    only while pydantic (a) asks that module's `get_plugins()` for its plugins when it builds a validator,
    (b) would answer `()` there when plugins are disabled, and (c) imports `importlib.metadata` only for
    that lookup (else the stand-in saves nothing). A pydantic release that changes any of these fails here."""
    code = textwrap.dedent(
        """
        import inspect, sys
        from pydantic.plugin import _loader, _schema_validator
        assert inspect.signature(_loader.get_plugins).parameters == {}, "get_plugins takes arguments now"
        assert tuple(_loader.get_plugins()) == (), "PYDANTIC_DISABLE_PLUGINS=__all__ no longer disables plugins"
        source = inspect.getsource(_schema_validator.create_schema_validator)
        assert "from ._loader import get_plugins" in source, "validators no longer ask _loader.get_plugins"
        assert "importlib.metadata" in inspect.getsource(_loader), "the loader no longer imports importlib.metadata"
        """
    )
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    planted = textwrap.dedent(
        """
        import sys
        from pluginsdk._entry import answer_no_pydantic_plugins
        answer_no_pydantic_plugins()
        import pydantic
        from pydantic_core import SchemaValidator
        class Probe(pydantic.BaseModel):
            name: str
        assert type(Probe.__pydantic_validator__) is SchemaValidator, type(Probe.__pydantic_validator__)
        assert Probe.model_validate({"name": "x"}).name == "x"
        assert "importlib.metadata" not in sys.modules, "pydantic imports importlib.metadata elsewhere now"
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    res = subprocess.run(
        [sys.executable, "-c", planted], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("users", [None, "__all__", ""])
def test_the_console_script_leaves_the_environment_of_its_children_alone(users: str | None) -> None:
    """A process started after the CLI ran (a scheduler hook, a worker) sees the caller's environment."""
    code = textwrap.dedent(
        """
        import subprocess, sys
        sys.argv = ["pluginsdk", "--help"]
        from pluginsdk._entry import main
        try:
            main()
        except SystemExit:
            pass
        child = "import os; print(repr(os.environ.get('PYDANTIC_DISABLE_PLUGINS')))"
        subprocess.run([sys.executable, "-c", child], check=True, stdout=sys.stderr)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if users is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = users
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().splitlines()[-1] == repr(users)
