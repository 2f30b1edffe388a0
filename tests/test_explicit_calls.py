"""A call's state moves in the open: the engine builds one `Call`, the authorizer fills it in, the handler
receives it. No module keeps per-call state in a context variable (the log's request id is a logging context,
`pluginsdk/logs.py`), and handler modules reach the database only through the stores' methods."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from backends.local.call import Call
from pluginsdk.operations import CreateRoleCommand, GetTemplateQuery
from tests.support.backends import open_sdk

ROOT = Path(__file__).resolve().parent.parent
LOGGING_CONTEXT = ROOT / "pluginsdk" / "logs.py"
HANDLER_DIRS = (ROOT / "backends" / "local" / "handlers", ROOT / "backends" / "local" / "auth" / "handlers")


def _sources(*dirs: Path) -> list[Path]:
    return [p for d in dirs for p in sorted(d.rglob("*.py"))]


def _named(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def test_no_context_variable_carries_a_calls_state() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _sources(ROOT / "pluginsdk", ROOT / "backends")
        if path != LOGGING_CONTEXT
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _named(node) == "ContextVar"
    ]
    assert found == []


_RAW = frozenset({"fetchall", "fetchone", "executemany"})


def _raw_sql(node: ast.AST) -> bool:
    """A statement run on the database itself (`fetchall`, `engine.db.db`) or auth tables opened per call."""
    if isinstance(node, ast.Attribute):
        return node.attr in {"fetchall", "fetchone", "executemany"} or (
            node.attr == "db" and _named(node.value) == "db"
        )
    return isinstance(node, ast.Call) and _named(node.func) == "AuthStore"


def test_handler_modules_run_no_sql_of_their_own() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _sources(*HANDLER_DIRS)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _raw_sql(node)
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
