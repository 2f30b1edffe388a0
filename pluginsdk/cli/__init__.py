"""The `pluginsdk` command line, derived from the operation catalog.

Every operation with a CLI binding becomes `pluginsdk GROUP ACTION [ARGS] [--options]`: positional
arguments from `Cli.args`, every other input field a `--kebab-case` option typed from the field (bool flags,
repeatable lists, JSON or key=value dicts), help from the docstrings. Groups load the catalog only when a
command runs or its help is shown, so `pluginsdk --help` stays cheap.

Output: `--format json|yaml|table|list` (default: table on a terminal, JSON otherwise), data on stdout,
diagnostics on stderr. Exit 0 on success; on failure exit 1 with the error envelope (JSON on stdout in
json format, a sentence on stderr otherwise).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .._constants import VERSION

__all__ = ["main"]

FORMATS = ("json", "yaml", "table", "list")


class Context:
    def __init__(self, **options: Any) -> None:
        self.options = options

    def settings_overrides(self) -> dict[str, Any]:
        o = self.options
        return {"logging.level": o.get("log_level"), "scheduler.type": o.get("scheduler"), "sdk.backend": None}


def _fields_of(group: str, action: str) -> Any:
    from ..operations import CATALOG

    for spec in CATALOG.values():
        if spec.cli and spec.cli.group == group and spec.cli.action == action:
            return spec
    return None


def _groups() -> dict[str, dict[str, str]]:
    from ..operations import CATALOG

    out: dict[str, dict[str, str]] = {}
    for spec in CATALOG.values():
        if spec.cli:
            out.setdefault(spec.cli.group, {})[spec.cli.action] = spec.summary
    return out


def _base(annotation: Any) -> Any:
    """`X | None` -> X."""
    import typing

    args = typing.get_args(annotation)
    return next(a for a in args if a is not type(None)) if type(None) in args else annotation


def _option_for(name: str, annotation: Any, help_text: str) -> click.Option:
    import typing

    base = _base(annotation)
    flag = "--" + name.replace("_", "-")
    if base is bool:
        return click.Option([f"{flag}/--no-{name.replace('_', '-')}"], default=None, help=help_text)
    if typing.get_origin(base) is list:
        return click.Option([flag], multiple=True, help=help_text + " (repeatable, or comma-separated)")
    if typing.get_origin(base) is dict or base is dict:
        return click.Option([flag], multiple=True, help=help_text + " (JSON object, or key=value, repeatable)")
    return click.Option([flag], default=None, required=False, help=help_text)


def _coerce(value: Any, annotation: Any) -> Any:
    import typing

    base = _base(annotation)
    if typing.get_origin(base) is list:
        return [v for item in value for v in str(item).split(",") if v != ""]
    if typing.get_origin(base) is dict or base is dict:
        out: dict[str, Any] = {}
        for item in value:
            if item.lstrip().startswith("{"):
                out.update(json.loads(item))
            else:
                k, _, v = item.partition("=")
                out[k] = v
        return out
    return value


def _load_file(path: str) -> dict[str, Any]:
    from pathlib import Path

    text = Path(path).read_text(encoding="utf-8")
    if path.endswith((".yaml", ".yml")):
        import yaml

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    if not isinstance(data, dict):
        raise click.BadParameter(f"{path} must hold a JSON/YAML object", param_hint="--file")
    return data


def _command(group: str, action: str) -> click.Command:
    spec = _fields_of(group, action)
    fields = spec.cls.model_fields
    docs = spec.field_docs()
    params: list[click.Parameter] = []
    positional = spec.cli.args
    for name in positional:
        nargs = -1 if _is_list(fields[name].annotation) else 1
        params.append(click.Argument([name], nargs=nargs, required=False))
    for name in spec.input_fields:
        if name in positional:
            continue
        params.append(_option_for(name, fields[name].annotation, docs.get(name, "")))
    if spec.body_fields or spec.kind == "command":
        params.append(
            click.Option(["--file", "-f", "input_file"], default=None, help="Read the input from a JSON/YAML file.")
        )
    params += [
        click.Option(["--format", "cmd_format"], type=click.Choice(FORMATS), default=None, help="Output format."),
        click.Option(["--output", "cmd_output"], default=None, help="Write output to FILE."),
        click.Option(["--quiet", "cmd_quiet"], is_flag=True, default=None, help="Print nothing on success."),
    ]

    @click.pass_obj
    def callback(ctx: Context, /, **kwargs: Any) -> None:
        for local, key in (("cmd_format", "format"), ("cmd_output", "output"), ("cmd_quiet", "quiet")):
            value = kwargs.pop(local)
            if value:
                ctx.options[key] = value
        data: dict[str, Any] = {}
        input_file = kwargs.pop("input_file", None)
        if input_file:
            data.update(_load_file(input_file))
        for name, value in kwargs.items():
            if value is None or value in ((), []):
                continue
            data[name] = _coerce(value, fields[name].annotation) if isinstance(value, tuple) else value
        if ctx.options.get("dry_run") and "dry_run" in fields:
            data.setdefault("dry_run", True)
        _run(ctx, spec.name, data)

    return click.Command(
        action,
        params=params,
        callback=callback,
        help=spec.summary + ("\n\n" + spec.description if spec.description else ""),
    )


def _is_list(annotation: Any) -> bool:
    import typing

    return typing.get_origin(_base(annotation)) is list


def _run(ctx: Context, name: str, data: dict[str, Any]) -> None:
    import asyncio

    from ..errors import SDKError
    from ..sdk import PluginSDK

    async def go() -> Any:
        async with PluginSDK(
            config_path=ctx.options.get("config"),
            backend=ctx.options.get("backend"),
            scheduler=ctx.options.get("scheduler"),
        ) as sdk:
            return await sdk.call(name, **data)

    try:
        result = asyncio.run(go())
    except SDKError as err:
        _emit_error(ctx, err.to_envelope())
        sys.exit(1)
    _emit(ctx, result.model_dump(mode="json") if hasattr(result, "model_dump") else result)


def _format(ctx: Context) -> str:
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


def _emit(ctx: Context, data: Any) -> None:
    if ctx.options.get("quiet"):
        return
    fmt = _format(ctx)
    if fmt == "json":
        _out(ctx, json.dumps(data, indent=2, default=str))
    elif fmt == "yaml":
        import yaml

        _out(ctx, yaml.safe_dump(data, sort_keys=False).rstrip())
    else:
        _out(ctx, _table(data, fmt))


def _table(data: Any, fmt: str) -> str:
    rows: list[dict[str, Any]] = []
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


def _emit_error(ctx: Context, envelope: dict[str, Any]) -> None:
    if _format(ctx) == "json":
        click.echo(json.dumps(envelope, indent=2, default=str))
    click.echo(f"Error: {envelope['error']} ({envelope['error_code']})", err=True)


class Group(click.Group):
    """A resource group whose commands are built from the catalog when asked for."""

    def __init__(self, name: str, actions: dict[str, str]) -> None:
        super().__init__(name, help=f"{name.replace('-', ' ').capitalize()} commands.")
        self.actions = actions

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.actions)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.actions:
            return None
        return _command(self.name or "", cmd_name)


class Root(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_groups(), "server", "mcp"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "server":
            return server
        if cmd_name == "mcp":
            from ..mcp.cli import mcp

            return mcp
        groups = _groups()
        if cmd_name in groups:
            return Group(cmd_name, groups[cmd_name])
        return None


@click.command(cls=Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", type=click.Path(dir_okay=False), help="Configuration file (JSON or YAML).")
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]))
@click.option("--format", "format", type=click.Choice(FORMATS), help="Output format (default: table on a terminal).")
@click.option("--output", type=click.Path(dir_okay=False), help="Write output to FILE (default stdout).")
@click.option("--quiet", is_flag=True, help="Print nothing on success.")
@click.option("--verbose", is_flag=True, help="More diagnostics on stderr.")
@click.option("--dry-run", is_flag=True, help="Validate and report; never touch the cloud provider.")
@click.option("--scheduler", type=click.Choice(["default", "hostfactory", "lsf"]), help="Output strategy.")
@click.option("--backend", help="local (default) or remote (a pluginsdk server: PLUGIN_API_URL / --config api.url).")
@click.version_option(VERSION, prog_name="pluginsdk")
@click.pass_context
def cli(ctx: click.Context, /, **options: Any) -> None:
    """Provision machines from templates and manage access — the pluginsdk command line."""
    import logging

    if options.get("log_level") or options.get("verbose"):
        logging.basicConfig(level=options.get("log_level") or "INFO", stream=sys.stderr)
    ctx.obj = Context(**options)


@click.group()
def server() -> None:
    """Run the REST server."""


@server.command("start")
@click.option("--host", default=None, help="Bind address (default: PLUGIN_API_HOST / api.host / 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default: PLUGIN_API_PORT / api.port / 8000).")
@click.pass_obj
def server_start(ctx: Context, host: str | None, port: int | None) -> None:
    """Serve the engine over HTTP in the foreground until SIGTERM/SIGINT."""
    from ..config import load_settings
    from ..server import serve

    settings = load_settings(
        config_path=ctx.options.get("config"), overrides={"logging.level": ctx.options.get("log_level")}
    )
    serve(settings, host, port)


def main() -> None:
    """Console entry point."""
    cli(prog_name="pluginsdk")
