"""How data objects show themselves to people: a compact `str()`, and rich output in Jupyter / IPython.

`str(obj)` is one line: `Request(request_id='req-1', status='completed', machines=[2 Machine])` — values
that are set and not their field's default, no timestamps or envelope noise (`success=True`), long text
clipped, nested lists counted.
In a notebook an object renders as a key/value table (`_repr_html_`; `_repr_pretty_` for IPython's
terminal), and each list of objects in it (`templates`, `machines`) as a compact table, one row an item,
at most `MAX_ROWS` rows and `MAX_COLUMNS` columns of the fields that are set. `repr()` stays pydantic's
full form, for debugging. Everything shown is escaped; a secret field (`Field(repr=False)`) shows as ***.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

__all__ = ["KEY_COLUMNS", "MAX_COLUMNS", "MAX_ROWS", "Decided", "Display", "ManyDecided", "pick_columns", "table_row"]

MAX_ROWS = 20
MAX_COLUMNS = 8
_CELL = 40
"""Characters of one value in a table cell or in `str()`."""
_ENVELOPE = frozenset({"success", "timestamp"})
_SECRET = "***"  # noqa: S105 - the mask, not a secret
"""Shown for a field declared `Field(repr=False)`: the secrets (an API key, tokens) never reach a display."""

KEY_COLUMNS = frozenset({"status", "status_reason", "is_active", "expires_at", "permissions", "change"})
"""Columns a table keeps however many others there are: what an item's state turns on (a key's activity
and expiry, why a machine failed, what a constraint grants, what an audit record changed)."""
_PERMISSIONS = ("group_permissions", "user_permissions")
_CRITERIA = ("criteria_and", "criteria_or")
_SNAPSHOTS = ("before", "after")

_TH = '<th style="text-align:left">'
_TD = '<td style="text-align:left">'


def _is_model(value: Any) -> bool:
    return hasattr(type(value), "model_fields")


def _is_model_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_model(v) for v in value)


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, list | dict | tuple) and not value)


def _clip(text: str, limit: int = _CELL) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scalar(value: Any) -> str:
    """One value as short text: enums by value, datetimes to the second, containers summarised."""
    if value is None:
        return ""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if _is_model(value):
        return f"{type(value).__name__}(…)"
    if isinstance(value, dict):
        if len(value) > 3:
            return f"{{{len(value)} keys}}"
        return ", ".join(f"{k}={_scalar(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        if value and all(_is_model(v) for v in value):
            return f"[{len(value)} {type(value[0]).__name__}]"
        if len(value) > 5:
            return ", ".join(_scalar(v) for v in value[:3]) + f", … ({len(value)} items)"
        return ", ".join(_scalar(v) for v in value)
    return str(value)


def _plain_dict(value: Any) -> Any:
    return value.model_dump() if _is_model(value) else value


def _permissions(row: dict[str, Any]) -> str:
    """`role:admin allow GET, PUT; user:bob deny PUT` — a constraint's grants, one clause per subject and type."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for key, kind in (("group_permissions", "role"), ("user_permissions", "user")):
        for p in map(_plain_dict, row.get(key) or ()):
            subject = p.get("group_id") or p.get("user_id") or "?"
            grouped.setdefault((f"{kind}:{subject}", str(p.get("permission_type", ""))), []).append(
                str(p.get("permission", ""))
            )
    return "; ".join(f"{who} {kind} {', '.join(methods)}" for (who, kind), methods in grouped.items())


def _criteria(items: Any) -> str:
    """`databaseId starts_with proj-, tags contains x`."""
    return ", ".join(
        f"{c.get('field')} {c.get('operator')} {c.get('value')}" for c in map(_plain_dict, items or ()) if c
    )


def _change(before: Any, after: Any) -> str:
    """An audit record's change: `created`, `deleted`, or the fields that differ (`is_active: 1 -> 0`; the
    `updated_at` every update moves is left out)."""
    if not before and not after:
        return ""
    if not before:
        return "created"
    if not after:
        return "deleted"
    keys = [k for k in {**before, **after} if before.get(k) != after.get(k) and k != "updated_at"]
    return ", ".join(f"{k}: {_scalar(before.get(k))} -> {_scalar(after.get(k))}" for k in keys) or "no change"


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """One item's values for a table: its permissions, criteria and before/after as text in one cell each.

    `permissions` takes the place of the first permissions field, `change` that of `before`.
    """
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in _PERMISSIONS:
            if "permissions" not in out:
                out["permissions"] = _permissions(row)
        elif key in _CRITERIA:
            out[key] = _criteria(value)
        elif key in _SNAPSHOTS:
            if "change" not in out:
                out["change"] = _change(_plain_dict(row.get("before")), _plain_dict(row.get("after")))
        else:
            out[key] = value
    return out


def pick_columns(names: list[str], limit: int) -> list[str]:
    """At most `limit` of `names`, in their order, every key column among them kept."""
    keys = [n for n in names if n in KEY_COLUMNS]
    room = max(limit - len(keys), 0)
    others = [n for n in names if n not in KEY_COLUMNS][:room]
    return [n for n in names if n in keys or n in others]


def _fields(obj: Any) -> list[tuple[str, Any]]:
    """The (name, value) pairs worth showing: set, not empty, not envelope bookkeeping; the envelope's
    `message` last (it comes first in field order, the result's own fields matter more)."""
    out = []
    for name, field in type(obj).model_fields.items():
        value = getattr(obj, name, None)
        if name in _ENVELOPE or _empty(value):
            continue
        out.append((name, value if field.repr else _SECRET))
    return sorted(out, key=lambda pair: pair[0] == "message" and "success" in type(obj).model_fields)


def _rows(items: list[Any]) -> list[dict[str, Any]]:
    """The shown items as table rows (`table_row`), secret fields left out."""
    shown = [n for n, f in type(items[0]).model_fields.items() if f.repr and n not in _ENVELOPE]
    return [table_row({n: getattr(item, n, None) for n in shown}) for item in items[:MAX_ROWS]]


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    """Columns set in at least one row and not lists of objects; key columns always among them."""
    names = [
        name
        for name in rows[0]
        if not all(_empty(r.get(name)) for r in rows) and not any(_is_model_list(r.get(name)) for r in rows)
    ]
    return pick_columns(names, MAX_COLUMNS)


def _default(obj: Any, name: str, value: Any) -> bool:
    """Whether `value` is the field's plain default, which `str()` leaves out (a `status` always stays)."""
    field = type(obj).model_fields[name]
    if name == "status" or field.default_factory is not None or field.is_required():
        return False
    try:
        return bool(value == field.default)
    except Exception:  # an exotic __eq__: show it
        return False


def compact(obj: Any) -> str:
    """The one-line `str()`: set values that are not their field's default (and `shown_always`); timestamps left
    out."""
    always = getattr(obj, "shown_always", ())
    parts = [
        f"{name}={_compact_value(value)}"
        for name, value in _fields(obj)
        if name in always or not (isinstance(value, datetime) or value is False or _default(obj, name, value))
    ]
    return f"{type(obj).__name__}({', '.join(parts)})"


def _compact_value(value: Any) -> str:
    """One value of `compact`: text clipped, models nested, long collections counted."""
    if isinstance(value, str):
        return repr(_clip(value, 60))
    if isinstance(value, enum.Enum):
        return repr(value.value)
    if isinstance(value, list | tuple) and value and all(_is_model(v) for v in value):
        return f"[{len(value)} {type(value[0]).__name__}]"
    if _is_model(value):
        return compact(value)
    if isinstance(value, list | tuple | dict) and len(value) > 5:
        return f"[{len(value)} items]" if not isinstance(value, dict) else f"{{{len(value)} keys}}"
    return repr(value)


# -- text (IPython terminal, `_repr_pretty_`) ----------------------------------------------
def _text_table(items: list[Any], indent: str) -> list[str]:
    shown = _rows(items)
    columns = _columns(shown)
    rows = [[_clip(_scalar(row.get(c))) for c in columns] for row in shown]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    lines = [indent + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += [indent + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if len(items) > MAX_ROWS:
        lines.append(f"{indent}… and {len(items) - MAX_ROWS} more")
    return lines


def text(obj: Any, indent: str = "") -> str:
    """Key/value lines; a nested object indented under its key, a list of objects as a table."""
    lines = [f"{indent}{type(obj).__name__}"] if not indent else []
    for name, value in _fields(obj):
        if _is_model_list(value):
            lines.append(f"{indent}  {name} ({len(value)}):")
            lines += _text_table(value, indent + "    ")
        elif _is_model(value) and len(indent) < 8:
            lines.append(f"{indent}  {name}:")
            lines.append(text(value, indent + "  "))
        else:
            lines.append(f"{indent}  {name}: {_clip(_scalar(value), 100)}")
    return "\n".join(lines)


# -- HTML (Jupyter, `_repr_html_`) ------------------------------------------------------------
def _html_table(items: list[Any]) -> str:
    import html  # on display only: every CLI call imports these models

    shown = _rows(items)
    columns = _columns(shown)
    head = "".join(f"{_TH}{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"{_TD}{html.escape(_clip(_scalar(row.get(c))))}</td>" for c in columns) + "</tr>"
        for row in shown
    )
    more = f"<p>… and {len(items) - MAX_ROWS} more</p>" if len(items) > MAX_ROWS else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _html_pairs(obj: Any, depth: int) -> str:
    import html

    rows = []
    lists = []
    for name, value in _fields(obj):
        if _is_model_list(value):
            summary = f"{html.escape(name)} ({len(value)})"
            lists.append(f"<details open><summary>{summary}</summary>{_html_table(value)}</details>")
            continue
        if _is_model(value) and depth < 3:
            cell = _html_pairs(value, depth + 1)
        else:
            cell = html.escape(_clip(_scalar(value), 200))
        rows.append(f"<tr>{_TH}{html.escape(name)}</th>{_TD}{cell}</td></tr>")
    table = f"<table><tbody>{''.join(rows)}</tbody></table>" if rows else ""
    return table + "".join(lists)


def rich_html(obj: Any) -> str:
    import html

    return f'<div class="pluginsdk"><strong>{html.escape(type(obj).__name__)}</strong>{_html_pairs(obj, 0)}</div>'


class Display:
    """Mixed into the data objects' BaseModel: `str()`, `_repr_pretty_` and `_repr_html_` (see the module)."""

    __slots__ = ()

    def __str__(self) -> str:
        return compact(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"{type(self).__name__}(…)" if cycle else text(self))

    def _repr_html_(self) -> str:
        return rich_html(self)


class Decided:
    """Mixed into every result that carries one decision (`allowed: bool`): `bool(result)` is the decision, so
    `if await sdk.is_allowed(...)` means what it says, and `str()` shows `allowed=False` (a default it would
    otherwise leave out)."""

    __slots__ = ()
    shown_always: ClassVar[frozenset[str]] = frozenset({"allowed"})
    if TYPE_CHECKING:
        allowed: bool  # each result declares it (a field of a model, of a dataclass)

    def __bool__(self) -> bool:
        return self.allowed is True


class ManyDecided:
    """Mixed into results that carry many decisions (a batch, a filter): they have no single truth value, so
    `bool()` refuses rather than be true whatever the decisions are."""

    __slots__ = ()

    def __bool__(self) -> bool:
        raise TypeError(
            f"a {type(self).__name__} holds many decisions and has no truth value: "
            "test its decisions (`.allowed`, `.decisions`) instead"
        )
