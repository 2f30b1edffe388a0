"""SQL lives in the store modules only (docs/design.md, "SQL only in the stores").

Read from the source (AST): a module outside the stores that writes a SQL statement in a string literal
(an f-string's or a concatenation's literal parts included) or passes a string to a database call
(`execute`, `executemany`, `fetchone`, `fetchall`) fails. The stores are `backends/local/store/` and the
auth service's `backends/local/auth/store.py`; everything else calls their methods.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from tests.support.sources import ROOT, Module, our_modules, parse

STORES = ("backends.local.store", "backends.local.auth.store")
FRAGMENTS = frozenset({"pluginsdk.plans"})
"""Modules that build a condition the stores append (an access plan's WHERE), not a statement of their own."""
_DB_CALLS = frozenset({"execute", "executemany", "fetchone", "fetchall", "executescript"})
_SQL = re.compile(
    r"\b(SELECT\b[\s\S]+\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(UNIQUE\s+)?(TABLE|INDEX)"
    r"|ALTER\s+TABLE|DROP\s+(TABLE|INDEX)|ON\s+CONFLICT)\b"
)


def _in_store(name: str) -> bool:
    return any(name == s or name.startswith(s + ".") for s in STORES)


def _literal_text(node: ast.expr) -> str | None:
    """The literal text of a string expression: constants, f-strings' literal parts, `+` of those."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ? ".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_text(node.left), _literal_text(node.right)
        if left is not None or right is not None:
            return f"{left or ''} ? {right or ''}"
    return None


def sql_outside_stores(module: Module) -> Iterator[str]:
    """Where `module` (not a store) writes SQL: a statement in a literal, or a string handed to a db call."""
    if _in_store(module.name) or module.name in FRAGMENTS:
        return
    skip: set[int] = set()
    for node in ast.walk(module.tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DB_CALLS:
            if node.args and _literal_text(node.args[0]) is not None:
                skip.update(id(n) for n in ast.walk(node.args[0]))
                yield f"{module.name} (line {node.lineno}) calls {node.func.attr} with a statement"
        elif isinstance(node, ast.Constant | ast.JoinedStr | ast.BinOp):
            text = _literal_text(node)
            if text and _SQL.search(text):
                skip.update(id(n) for n in ast.walk(node))
                yield f"{module.name} (line {node.lineno}) writes SQL: {text.strip()[:60]!r}"


def test_sql_only_in_store_modules() -> None:
    found = [v for m in our_modules().values() for v in sql_outside_stores(m)]
    assert not found, "SQL outside the store modules (add a store method):\n" + "\n".join(found)


def test_the_scan_sees_planted_sql() -> None:
    """The scan on modules written here: one that saw nothing would pass vacuously."""

    def planted(name: str, source: str) -> Module:
        return Module(name, ROOT / (name.replace(".", "/") + ".py"), False, parse(source))

    outside = planted(
        "backends.local.auth.example",
        "async def f(db, t):\n"
        "    await db.fetchall('SELECT a FROM b')\n"
        "    q = f'DELETE FROM {t} WHERE k = 1'\n"
        "    await db.execute(q)\n"
        "    r = 'INSERT INTO x (a)' + ' VALUES (1)'\n"
        "    method = 'DELETE'\n",
    )
    assert [v.split(" ", 3)[3].split(":")[0] for v in sorted(sql_outside_stores(outside))] == [
        "calls fetchall with a statement",
        "writes SQL",
        "writes SQL",
    ]
    inside = planted("backends.local.store.example", "async def f(db):\n    await db.fetchall('SELECT a FROM b')\n")
    assert list(sql_outside_stores(inside)) == []
