"""A call's state moves in the open: the engine builds one `Call`, the authorizer fills it in, the handler
receives it. No module keeps per-call state in a context variable (the log's request id is a logging context,
`pluginsdk/logs.py`), and handler modules reach the database only through the stores' methods. A handler
receives the narrow dependency its table names (`Deps` or the auth service), never the engine, and no module
keeps a service's state in a global keyed by the object."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from backends.local.call import Call
from backends.local.engine import HandlerRegistry
from pluginsdk.operations import CATALOG, CreateRoleCommand, GetTemplateQuery
from tests.support.backends import open_sdk
from tests.support.sources import trees_of

ROOT = Path(__file__).resolve().parent.parent
LOGGING_CONTEXT = ROOT / "pluginsdk" / "logs.py"
TRANSPORT_CONTEXT = ROOT / "pluginsdk" / "server" / "remote_mcp" / "answers.py"
"""The MCP transport's answer mode for the POST at hand, read inside the `mcp` SDK's transport, which no
argument of ours reaches; it carries nothing of an operation's call."""
HANDLER_DIRS = (ROOT / "backends" / "local" / "handlers", ROOT / "backends" / "local" / "auth" / "handlers")


def _sources(*dirs: Path) -> list[tuple[Path, ast.Module]]:
    """Each module under `dirs` and its syntax tree."""
    paths = [p for d in dirs for p in sorted(d.rglob("*.py"))]
    return list(zip(paths, trees_of(paths), strict=True))


def _named(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def test_no_context_variable_carries_a_calls_state() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _sources(ROOT / "pluginsdk", ROOT / "backends")
        if path not in (LOGGING_CONTEXT, TRANSPORT_CONTEXT)
        for node in ast.walk(tree)
        if _named(node) == "ContextVar"
    ]
    assert found == []


_RAW = frozenset({"fetchall", "fetchone", "executemany"})


def _raw_sql(node: ast.AST) -> bool:
    """A statement run on the database itself (`fetchall`, `engine.store.db`) or auth tables opened per call."""
    if isinstance(node, ast.Attribute):
        return node.attr in {"fetchall", "fetchone", "executemany"} or (
            node.attr == "db" and _named(node.value) == "db"
        )
    return isinstance(node, ast.Call) and _named(node.func) == "AuthStore"


def test_handler_modules_run_no_sql_of_their_own() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _sources(*HANDLER_DIRS)
        for node in ast.walk(tree)
        if _raw_sql(node)
    ]
    assert found == []


_ENGINE_PARTS = frozenset({"engine", "authz", "auth"})
"""The engine itself and its authorizer: what a handler would reach through to walk the engine."""


def _reaches_into_the_engine(node: ast.AST) -> str | None:
    """What in `node` walks the engine: its name or module, an attribute of it or of its authorizer, a cast
    (a downcast of what the handler received), a private attribute of another object, auth tables opened
    by hand."""
    if isinstance(node, ast.ImportFrom) and (node.module or "").rsplit(".", 1)[-1] == "engine":
        return f"imports {node.module}"
    if isinstance(node, ast.Name) and node.id in {"engine", "Engine"}:
        return node.id
    private = isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
    if isinstance(node, ast.Attribute) and (node.attr in _ENGINE_PARTS or private):
        return f".{node.attr}"
    if isinstance(node, ast.Call) and _named(node.func) in {"cast", "AuthStore"}:
        shown = ast.unparse(node.args[0]) if node.args else ""
        if _named(node.func) == "AuthStore" or "Auth" in shown or "Authorizer" in shown:
            return ast.unparse(node)
    return None


def test_handler_modules_do_not_reach_into_the_engine() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {what}"
        for path, tree in _sources(*HANDLER_DIRS)
        for node in ast.walk(tree)
        if (what := _reaches_into_the_engine(node)) is not None
    ]
    assert found == []


def test_each_handler_takes_what_its_table_names() -> None:
    """A handler's first parameter is annotated with the type the engine hands it (`HandlerTable.receives`,
    or the one `on(..., receives=)` names): `Deps` or `AuthService`."""
    registry = HandlerRegistry()
    for spec in CATALOG.values():
        handler = registry.get(spec.cls)
        assert handler is not None, spec.name
        first = handler.__code__.co_varnames[0]
        assert handler.__annotations__[first] == registry.receives(spec.cls).__name__, spec.name
        assert registry.receives(spec.cls).__name__ in {"Deps", "AuthService"}, spec.name


def test_no_module_keeps_state_keyed_by_an_object() -> None:
    """Caches keyed by object identity in a module global are state of the object they belong to: the
    service's decision model and workers, the policy model's answers."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _sources(ROOT / "pluginsdk", ROOT / "backends")
        for node in ast.walk(tree)
        if _named(node) in {"WeakKeyDictionary", "WeakValueDictionary", "WeakSet"}
    ]
    assert found == []


async def test_the_handler_receives_the_call_authorization_filled_in(tmp_path: Path) -> None:
    """A read of one template: the handler's call holds the resolved principal, the policy version decided on
    and the template tier 2 read (answered as is); a policy write records its revision on its own call, which
    its audit record and its answer carry."""
    async with open_sdk("local", tmp_path) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
        engine = sdk.backend.engine  # type: ignore[attr-defined]
        seen: list[Call] = []
        for op in (GetTemplateQuery, CreateRoleCommand):
            handler = engine.handlers.get(op)

            async def spy(engine: Any, op: Any, call: Call, handler: Any = handler) -> Any:
                seen.append(call)
                return await handler(engine, op, call)

            engine.handlers._handlers[op] = spy
        shown = await sdk.get_template("web")
        read = seen[-1]
        assert read.op.spec.name == "get_template" and read.stored is not None
        assert read.stored.template_id == shown.template.template_id == "web"
        assert read.principal.roles and read.principal.policy_version is None
        assert read.policy_version == await engine.authz.store.policy_version()
        written = await sdk.create_role(role_name="editors", description="edits")
        write = seen[-1]
        assert write.spec.name == "create_role" and write.revision == written.revision
        assert write.had_administrator is True
        records = await sdk.list_audit_records(action="create_role")
        assert [r.revision for r in records.records] == [written.revision]
