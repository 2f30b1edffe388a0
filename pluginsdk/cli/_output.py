"""Rendering to stdout: json, yaml, table or list; errors as the envelope (JSON) plus one line on stderr.

`table` shows a listing as columns, and one object (`templates show`) as its fields, one per line;
`list` shows every record as `key: value` lines, records separated by a blank line, nested values as
JSON. Empty values (None, [], {}) print blank. `--output FILE` is checked before the operation runs
(`check_output`) and written whole or not at all (`write_output`).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from . import Context

__all__ = ["FORMATS", "check_output", "emit", "emit_error", "output_format", "render", "write_output"]

FORMATS = ("json", "yaml", "table", "list")

_MAX_COLUMNS = 7


def output_format(ctx: Context) -> str:
    """The chosen format; default a table on a terminal and JSON otherwise (pipes, schedulers)."""
    fmt = ctx.options.get("format")
    if fmt:
        return str(fmt)
    return "table" if sys.stdout.isatty() else "json"


def check_output(path: str | None) -> None:
    """Refuse an `--output` path that cannot be written, before anything runs (a usage error)."""
    if not path or path == "-":
        return
    target = Path(path)
    parent = target.parent
    problem = None
    if target.is_dir():
        problem = "it is a directory"
    elif not parent.is_dir():
        problem = f"the directory {str(parent)!r} does not exist"
    elif not (os.access(parent, os.W_OK) or (target.exists() and os.access(target, os.W_OK))):
        problem = "it is not writable"
    if problem:
        raise click.BadParameter(f"cannot write {path!r}: {problem}.", param_hint="'--output'")


def write_output(ctx: Context, text: str) -> None:
    """Write `text` to `--output` (a temporary file renamed over it: never half-written) or stdout.

    Raises OSError when the file cannot be written; stdout is untouched then.
    """
    path = ctx.options.get("output")
    if not path or path == "-":
        click.echo(text)
        return
    target = Path(os.path.realpath(path))  # through a symlink, not over it
    special = target.exists() and not target.is_file()  # a device or FIFO (/dev/stderr): never replaced
    if special or not os.access(target.parent, os.W_OK):  # ... nor a writable file in a read-only directory
        with target.open("w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        return
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text + "\n", encoding="utf-8")
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def render(ctx: Context, data: Any) -> str:
    """`data` as text in the chosen format."""
    fmt = output_format(ctx)
    if fmt in ("json", "yaml"):
        return structured(data, fmt)
    return _records(data) if fmt == "list" else _table(data)


def structured(data: Any, fmt: str) -> str:
    """`data` as JSON (`fmt` "json") or YAML (otherwise), as every structured output of the CLI prints it."""
    if fmt == "json":
        return json.dumps(data, indent=2, default=str)
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True)).rstrip()


def emit(ctx: Context, data: Any) -> None:
    """Print a result in the chosen format (nothing with --quiet).

    A `--output` file that cannot be written gets the result on stdout instead, and exit OUTPUT_FAILED.
    """
    if ctx.options.get("quiet"):
        return
    text = render(ctx, data)
    try:
        write_output(ctx, text)
    except OSError as exc:
        from ._exit import OUTPUT_FAILED

        click.echo(text)
        click.echo(
            f"Error: could not write {ctx.options.get('output')!r} ({exc.strerror or exc}); "
            "the result is on stdout instead.",
            err=True,
        )
        sys.exit(OUTPUT_FAILED)


def _cell(value: Any) -> str:
    """One value as text: blank when empty, lists of scalars comma-separated, other structures as JSON."""
    if value is None or value in ([], {}):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict | list):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


def _is_object(data: dict[str, Any]) -> bool:
    """One record rather than a listing: it names itself with an id (`request_id`, `template_id`, ...)."""
    return any(k.endswith("_id") and v not in (None, "") and not isinstance(v, list | dict) for k, v in data.items())


def _rows(data: Any) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """(rows of a listing, or None; the one object otherwise).

    Auth-service listings nest under `message`; a listing is the first list of objects of a result that
    names no id of its own. One object (`templates show`, `requests show`) has its nested objects' fields
    brought up a level (the template's fields), named `outer.inner` only where a name would repeat; its
    lists of objects (a request's machines) stay in it.
    """
    if isinstance(data, dict) and isinstance(data.get("message"), dict):
        data = data["message"]
    if not isinstance(data, dict):
        return None, {"value": data}
    rows = None if _is_object(data) else _listing(data)
    return (rows, None) if rows is not None else (None, _flattened(data))


def _listing(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The first list of objects in `data`, or None."""
    for value in data.values():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return value
    return None


def _flattened(data: dict[str, Any]) -> dict[str, Any]:
    """One object with its nested objects' fields a level up (`outer.inner` where a name would repeat)."""
    one: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            for inner, v in value.items():
                one[f"{key}.{inner}" if inner in data or inner in one else inner] = v
        else:
            one[key] = value
    return one


def _table(data: Any) -> str:
    rows, one = _rows(data)
    if one is None:
        assert rows is not None
        return _columns(rows)
    flat = {k: v for k, v in one.items() if not (_nested_list(v) and all(isinstance(i, dict) for i in v))}
    width = max((len(k) for k in flat), default=0)
    parts = ["\n".join(f"{k.upper().ljust(width)}  {_cell(v)}".rstrip() for k, v in flat.items())]
    for key, value in one.items():
        if key not in flat:  # a list of objects (a request's machines): its own table below
            parts.append(f"{key.upper()}:\n{_columns(value)}")
    return "\n\n".join(parts)


def _columns(rows: list[dict[str, Any]]) -> str:
    """A listing as columns: nested facts as text (`table_row`), at most `_MAX_COLUMNS`, the key columns
    (status and its reason, a key's activity and expiry, permissions, an audit record's change) always among
    them when any row has a value there."""
    from ..models._display import KEY_COLUMNS, pick_columns, table_row

    rows = [table_row(r) for r in rows]
    names = list(dict.fromkeys(c for r in rows for c in r))
    shown = [c for c in names if _flat(c, rows) and (c not in KEY_COLUMNS or _filled(c, rows))]
    cols = pick_columns(shown, _MAX_COLUMNS)
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def _flat(column: str, rows: list[dict[str, Any]]) -> bool:
    """No row holds an object or a list of objects there (those get tables of their own)."""
    return not any(isinstance(r.get(column), dict) or _nested_list(r.get(column)) for r in rows)


def _filled(column: str, rows: list[dict[str, Any]]) -> bool:
    return any(_cell(r.get(column)) for r in rows)


def _nested_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and any(isinstance(v, dict | list) for v in value)


def _records(data: Any) -> str:
    rows, one = _rows(data)
    records = rows if rows is not None else [one or {}]
    return "\n\n".join("\n".join(f"{k}: {_cell(v)}".rstrip() for k, v in r.items()) for r in records)


def emit_error(ctx: Context, envelope: dict[str, Any], rendered: dict[str, Any] | None = None) -> None:
    """The failure: `rendered` (the envelope by default) on stdout in JSON/YAML format, one sentence on stderr."""
    fmt = output_format(ctx)
    if fmt in ("json", "yaml"):
        click.echo(structured(rendered or envelope, fmt))
    click.echo(f"Error: {envelope['error']} ({envelope['error_code']})", err=True)


def fail_on_stderr(envelope: dict[str, Any], code: int) -> NoReturn:
    """Print the error envelope as one JSON line on stderr and exit `code`. For commands whose stdout is data
    of their own (`slurm config`'s lines, `slurm reconcile`'s repairs) or read by nobody (the Slurm programs,
    `worker`): cron and the journal get the envelope, never a traceback."""
    click.echo(json.dumps(envelope, default=str), err=True)
    sys.exit(code)
