"""Render a query plan (`plan_access`'s `AccessPlan`) as a filter a service runs on its own data.

- `to_sql(plan, columns, dialect=...)`: a parameterised SQL `WHERE` fragment for SQLite or PostgreSQL. Values only
  ever travel as parameters; the SQL text holds the caller's column expressions, operators and placeholders.
- `to_sqlalchemy(plan, columns)`: the same condition as a SQLAlchemy Core expression (SQLAlchemy imported only
  then; it is not a dependency of pluginsdk).
- `predicate(plan)`: `attributes -> bool`, for objects held in memory.

Each gives, object by object, the decision `check_access` gives for the plan's subject, object type and method
(`tests/policy/test_plan_properties.py` holds all three to it on random policies): text matched case-sensitively
with `*` as any run of characters, a list attribute matching when an element does, an absent (`None`, SQL NULL)
attribute having no values — positive criteria fail on it, negated ones hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeAlias

if TYPE_CHECKING:
    from .models.plans import AccessPlan, PlanCondition

__all__ = ["Column", "SqlFilter", "leaf_patterns", "predicate", "to_sql", "to_sqlalchemy", "values_of"]

_NEGATED: Final = frozenset({"does_not_contain", "is_not_one_of"})
_MARK: Final = "\x00"
"""Where a parameter goes in a fragment being built (a column expression never holds it)."""


def leaf_patterns(operator: str, value: str) -> tuple[tuple[str, ...], bool]:
    """(the whole-string `*` patterns a criterion stands for, negated?), as the policy evaluator reads it:
    `contains p` is `*p*`, `starts_with p` is `p*`, `ends_with p` is `*p`, `*_one_of` a comma-separated list
    (items trimmed, empty ones dropped). An unknown operator is a ValueError (a plan never holds one)."""
    if operator in ("equals", "contains", "does_not_contain", "starts_with", "ends_with"):
        text = {"equals": "{}", "starts_with": "{}*", "ends_with": "*{}"}.get(operator, "*{}*").format(value)
        patterns: tuple[str, ...] = (text,)
    elif operator in ("is_one_of", "is_not_one_of"):
        patterns = tuple(item.strip() for item in value.split(",") if item.strip())
    else:
        raise ValueError(f"unknown operator {operator!r} in a plan")
    return tuple(_squeeze(p) for p in patterns), operator in _NEGATED


def _squeeze(pattern: str) -> str:
    while "**" in pattern:
        pattern = pattern.replace("**", "*")
    return pattern


def _matches(pattern: str, value: str) -> bool:
    parts = pattern.split("*")
    if len(parts) == 1:
        return value == pattern
    head, tail, middle = parts[0], parts[-1], parts[1:-1]
    if len(value) < len(head) + len(tail) or not value.startswith(head) or not value.endswith(tail):
        return False
    pos, end = len(head), len(value) - len(tail)
    for seg in middle:  # leftmost placement of each segment is optimal when `*` separates them
        i = value.find(seg, pos, end)
        if i < 0:
            return False
        pos = i + len(seg)
    return True


def values_of(raw: Any) -> tuple[str, ...]:
    """An attribute as the strings it is matched as: none when absent, each element of a list (the
    decision point reads attributes the same way: `backends.local.policy.matching` uses this one)."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list | tuple | set | frozenset):
        return tuple(x if isinstance(x, str) else str(x) for x in raw if x is not None)
    return (str(raw),)


Predicate: TypeAlias = Callable[[Mapping[str, Any]], bool]


def _compile(node: PlanCondition) -> Predicate:
    if node.op == "match":
        field = node.field or ""
        patterns, negated = leaf_patterns(node.operator or "", node.value or "")

        def match(attrs: Mapping[str, Any]) -> bool:
            hit = any(_matches(p, v) for v in values_of(attrs.get(field)) for p in patterns)
            return hit is not negated

        return match
    parts = [_compile(n) for n in node.operands]
    if node.op == "and":
        return lambda attrs: all(p(attrs) for p in parts)
    if node.op == "or":
        return lambda attrs: any(p(attrs) for p in parts)
    if node.op == "not":
        inner = parts[0]
        return lambda attrs: not inner(attrs)
    raise ValueError(f"unknown plan node {node.op!r}")


def predicate(plan: AccessPlan) -> Predicate:
    """`attributes -> allowed?` for the plan's subject, object type and method."""
    if plan.kind == "always":
        return lambda attrs: True
    if plan.kind == "never" or plan.condition is None:
        return lambda attrs: False
    return _compile(plan.condition)


class Column(NamedTuple):
    """How a criterion field is stored: a column expression (trusted SQL text from the caller, never a value),
    whether it holds a JSON array of strings (`tags`) rather than one text, and whether it is never NULL (then a
    criterion any present value satisfies — `equals "*"` — needs no test).

    NamedTuples rather than frozen dataclasses: the decision point imports this module on every CLI call
    (`values_of`), and a dataclass compiles its methods at import."""

    expr: str
    json_list: bool = False
    not_null: bool = False


class SqlFilter(NamedTuple):
    """A `WHERE` fragment and its parameters (a dict for the named styles, a list for the positional ones)."""

    sql: str
    params: dict[str, str] | list[str]


Dialect: TypeAlias = Literal["sqlite", "postgresql"]
ParamStyle: TypeAlias = Literal["named", "qmark", "numeric", "format", "pyformat"]

_Frag: TypeAlias = "tuple[str, tuple[str, ...]] | bool"
"""SQL text with `_MARK` where each parameter goes, and the parameters in order; or a constant."""


def _glob(pattern: str) -> str:
    """A `*` pattern as an SQLite GLOB (case-sensitive, unlike SQLite's LIKE): literal `?` `[` `*` bracketed."""
    out = []
    for i, part in enumerate(pattern.split("*")):
        if i:
            out.append("*")
        out.append("".join(f"[{c}]" if c in "?[*" else c for c in part))
    return "".join(out)


def _like(pattern: str) -> str:
    """A `*` pattern as a PostgreSQL LIKE with `\\` as its escape: literal `\\` `%` `_` escaped."""
    parts = ("".join("\\" + c if c in "\\%_" else c for c in part) for part in pattern.split("*"))
    return "%".join(parts)


def _join(op: str, frags: Sequence[_Frag]) -> _Frag:
    """`and`/`or` of fragments, constants folded, grouped as a balanced tree (SQLite limits expression depth)."""
    unit = op == "AND"
    kept: list[tuple[str, tuple[str, ...]]] = []
    for f in frags:
        if f is unit:
            continue
        if f is (not unit):
            return not unit
        assert not isinstance(f, bool)
        kept.append(f)
    if not kept:
        return unit
    while len(kept) > 1:
        paired = [(f"({a[0]} {op} {b[0]})", a[1] + b[1]) for a, b in zip(kept[::2], kept[1::2], strict=False)]
        kept = paired + kept[len(paired) * 2 :]
    return kept[0]


class _Sql:
    def __init__(self, columns: Mapping[str, str | Column], dialect: Dialect) -> None:
        self.columns = {f: c if isinstance(c, Column) else Column(c) for f, c in columns.items()}
        self.dialect = dialect

    def column(self, field: str) -> Column:
        col = self.columns.get(field)
        if col is None:
            raise ValueError(f"the plan tests field {field!r}: map it to a column (or to 'NULL' if never stored)")
        return col

    def any_of(self, target: str, patterns: Sequence[str], not_null: bool) -> _Frag:
        """Some pattern matches the text `target` (NULL: none does)."""
        if "*" in patterns:
            return True if not_null else (f"{target} IS NOT NULL", ())
        exact = tuple(dict.fromkeys(p for p in patterns if "*" not in p))
        wild = [p for p in dict.fromkeys(patterns) if "*" in p]
        tests: list[_Frag] = []
        if len(exact) == 1:
            tests.append((f"{target} = {_MARK}", exact))
        elif exact:
            tests.append((f"{target} IN ({', '.join(_MARK for _ in exact)})", exact))
        for p in wild:
            if self.dialect == "sqlite":
                tests.append((f"{target} GLOB {_MARK}", (_glob(p),)))
            else:
                tests.append((f"{target} LIKE {_MARK} ESCAPE '\\'", (_like(p),)))
        hit = _join("OR", tests)
        return hit if not_null else _join("AND", [(f"{target} IS NOT NULL", ()), hit])

    def leaf(self, field: str, patterns: Sequence[str]) -> _Frag:
        """Some value of `field` matches some pattern: never NULL (SQL's unknown would break `NOT`)."""
        col = self.column(field)
        if not patterns:
            return False
        if not col.json_list:
            return self.any_of(col.expr, patterns, col.not_null)
        if self.dialect == "sqlite":
            source, value = f"json_each({col.expr}) AS plan_e", "plan_e.value"
        else:
            source, value = f"jsonb_array_elements_text(CAST({col.expr} AS jsonb)) AS plan_e(v)", "plan_e.v"
        hit = self.any_of(value, patterns, False)
        if isinstance(hit, bool):
            return hit
        return f"EXISTS (SELECT 1 FROM {source} WHERE {hit[0]})", hit[1]

    def node(self, node: PlanCondition) -> _Frag:
        if node.op == "match":
            field = node.field or ""
            patterns, negated = leaf_patterns(node.operator or "", node.value or "")
            return _negate(self.leaf(field, patterns)) if negated else self.leaf(field, patterns)
        if node.op == "not":
            return _negate(self.node(node.operands[0]))
        if node.op == "and":
            return _join("AND", [self.node(n) for n in node.operands])
        if node.op == "or":
            return self.any_node(node.operands)
        raise ValueError(f"unknown plan node {node.op!r}")

    def any_node(self, operands: Sequence[PlanCondition]) -> _Frag:
        """`or` of the operands; positive leaves on one field are one test — an IN list and the patterns
        (policies grant long lists of ids, and one test per field keeps the SQL small)."""
        merged: dict[str, list[str]] = {}
        rest: list[_Frag] = []
        for n in operands:
            if n.op == "match" and n.operator not in _NEGATED:
                merged.setdefault(n.field or "", []).extend(leaf_patterns(n.operator or "", n.value or "")[0])
            else:
                rest.append(self.node(n))
        return _join("OR", [*(self.leaf(f, ps) for f, ps in merged.items()), *rest])


def _negate(frag: _Frag) -> _Frag:
    return (not frag) if isinstance(frag, bool) else (f"NOT {frag[0]}", frag[1])


def to_sql(
    plan: AccessPlan,
    columns: Mapping[str, str | Column],
    *,
    dialect: Dialect = "sqlite",
    paramstyle: ParamStyle = "named",
    prefix: str = "plan_",
) -> SqlFilter:
    """The plan as a `WHERE` fragment: `columns` maps each criterion field the plan tests to its column
    expression (a plain string: a nullable text column; `Column(..., json_list=True)`: a JSON array of strings).
    `paramstyle` as DB-API names them — named `:plan_0` (sqlite3, and the store's own SQL), qmark `?` (sqlite3),
    numeric `$1` (asyncpg), format `%s` and pyformat `%(plan_0)s` (psycopg). A field the plan tests but
    `columns` does not map is a ValueError. `always` is `1 = 1`, `never` `1 = 0`."""
    if plan.kind == "always":
        frag: _Frag = True
    elif plan.kind == "never" or plan.condition is None:
        frag = False
    else:
        frag = _Sql(columns, dialect).node(plan.condition)
    if isinstance(frag, bool):
        return SqlFilter("1 = 1" if frag else "1 = 0", {} if paramstyle in ("named", "pyformat") else [])
    text, values = frag
    pieces = text.split(_MARK)
    names = [f"{prefix}{i}" for i in range(len(values))]
    marks = {
        "named": [f":{n}" for n in names],
        "pyformat": [f"%({n})s" for n in names],
        "qmark": ["?"] * len(values),
        "format": ["%s"] * len(values),
        "numeric": [f"${i + 1}" for i in range(len(values))],
    }[paramstyle]
    sql = pieces[0] + "".join(m + p for m, p in zip(marks, pieces[1:], strict=True))
    params: dict[str, str] | list[str] = (
        dict(zip(names, values, strict=True)) if paramstyle in ("named", "pyformat") else list(values)
    )
    return SqlFilter(sql, params)


def to_sqlalchemy(plan: AccessPlan, columns: Mapping[str, str | Column], *, dialect: Dialect = "sqlite") -> Any:
    """The plan as a SQLAlchemy Core boolean expression for `select(...).where(...)`: the `to_sql` fragment with
    its values as bound parameters (`sqlalchemy.text(...).bindparams(...)`), so it composes with the service's
    own criteria, paging and `func.count()`. Needs SQLAlchemy installed (pluginsdk does not depend on it)."""
    import sqlalchemy

    rendered = to_sql(plan, columns, dialect=dialect, paramstyle="named")
    assert isinstance(rendered.params, dict)
    return sqlalchemy.text(rendered.sql).bindparams(**rendered.params)
