"""Rendering to stdout: json, yaml, table or list; errors as the envelope (JSON) plus one line on stderr."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from . import Context

__all__ = ["FORMATS", "emit", "emit_error", "output_format"]

FORMATS = ("json", "yaml", "table", "list")


def output_format(ctx: Context) -> str:
    """The chosen format; default a table on a terminal and JSON otherwise (pipes, schedulers)."""
    fmt = ctx.options.get("format")
    if fmt:
        return str(fmt)
    return "table" if sys.stdout.isatty() else "json"


def _out(ctx: Context, text: str) -> None:
    path = ctx.options.get("output")
    if path and path != "-":
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    else:
        click.echo(text)


def emit(ctx: Context, data: Any) -> None:
    """Print a result in the chosen format (nothing with --quiet)."""
    if ctx.options.get("quiet"):
        return
    fmt = output_format(ctx)
    if fmt == "json":
        _out(ctx, json.dumps(data, indent=2, default=str))
    elif fmt == "yaml":
        import yaml

        _out(ctx, yaml.safe_dump(data, sort_keys=False).rstrip())
    else:
        _out(ctx, _table(data, fmt))


def _table(data: Any, fmt: str) -> str:
    rows: list[dict[str, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("message"), dict):
        data = data["message"]  # auth-service listings: `message.Items`
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        rows = lists[0] if lists else [data]
    if fmt == "list" or not rows:
        return "\n".join(f"{k}: {v}" for row in rows or [data] for k, v in row.items())
    cols = [c for c in rows[0] if not isinstance(rows[0][c], dict | list)][:7]
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    lines = ["  ".join(c.upper().ljust(widths[c]) for c in cols)]
    lines += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def emit_error(ctx: Context, envelope: dict[str, Any], rendered: dict[str, Any] | None = None) -> None:
    """The failure: `rendered` (the envelope by default) on stdout in JSON format, one sentence on stderr."""
    if output_format(ctx) == "json":
        click.echo(json.dumps(rendered or envelope, indent=2, default=str))
    click.echo(f"Error: {envelope['error']} ({envelope['error_code']})", err=True)
