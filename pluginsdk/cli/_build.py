"""Click commands built from operation specs: positional args from the binding, every other field an option."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ._output import FORMATS

if TYPE_CHECKING:
    from ..operations import OperationSpec
    from . import Context

__all__ = ["command_for", "find_spec"]


def find_spec(group: str, action: str) -> OperationSpec | None:
    """The catalog entry bound to `pluginsdk GROUP ACTION` (imports the catalog)."""
    from ..operations import CATALOG
    from ._index import OPERATIONS

    name = OPERATIONS.get(f"{group} {action}")
    if name is not None and name in CATALOG:  # imports only that operation's module
        spec = CATALOG[name]
        if spec.cli and (spec.cli.group, spec.cli.action) == (group, action):
            return spec
    for spec in CATALOG.values():  # an index older than the catalog
        if spec.cli and spec.cli.group == group and spec.cli.action == action:
            return spec
    return None


def catalog_groups() -> dict[str, dict[str, str]]:
    """group -> action -> summary, read from the catalog (what the static index is generated from)."""
    from ..operations import CATALOG

    out: dict[str, dict[str, str]] = {}
    for spec in CATALOG.values():
        if spec.cli:
            out.setdefault(spec.cli.group, {})[spec.cli.action] = spec.summary
    return {g: dict(sorted(a.items())) for g, a in sorted(out.items())}


def _base(annotation: Any) -> Any:
    """`X | None` -> X."""
    import typing

    args = typing.get_args(annotation)
    return next(a for a in args if a is not type(None)) if type(None) in args else annotation


def _is_list(annotation: Any) -> bool:
    import typing

    return typing.get_origin(_base(annotation)) is list


def _option_for(name: str, annotation: Any) -> click.Option:
    """The option of one input field; its help (the field doc) is prepended when help is shown."""
    import typing

    base = _base(annotation)
    flag = "--" + name.replace("_", "-")
    if base is bool:
        return click.Option([f"{flag}/--no-{name.replace('_', '-')}"], default=None)
    if typing.get_origin(base) is list:
        return click.Option([flag], multiple=True, help="(repeatable, or comma-separated)")
    if typing.get_origin(base) is dict or base is dict:
        return click.Option([flag], multiple=True, help="(JSON object, or key=value, repeatable)")
    return click.Option([flag], default=None, required=False)


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


class OperationCommand(click.Command):
    """A catalog command whose option help is read from the field docstrings only when help is shown.

    Field docs come from the operation module's source (an AST parse); a run never shows them.
    """

    def __init__(self, spec: OperationSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.documented = False

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not self.documented:
            self.documented = True
            docs = self.spec.field_docs()
            for param in self.params:
                if isinstance(param, click.Option) and param.name in docs:
                    param.help = " ".join(filter(None, (docs[param.name], param.help)))
        super().format_options(ctx, formatter)


def command_for(spec: OperationSpec) -> click.Command:
    """The click command of one operation; its callback hands the collected input to `run_operation`."""
    fields = spec.cls.model_fields
    params: list[click.Parameter] = []
    positional = spec.cli.args if spec.cli else ()
    for name in positional:
        nargs = -1 if _is_list(fields[name].annotation) else 1
        params.append(click.Argument([name], nargs=nargs, required=False))
    for name in spec.input_fields:
        if name not in positional:
            params.append(_option_for(name, fields[name].annotation))
    params += [
        click.Option(["--file", "-f", "input_file"], default=None, help="Read the input object from a JSON/YAML file."),
        click.Option(["--data", "-d", "input_data"], default=None, help="The input object as JSON text."),
        click.Option(["--format", "cmd_format"], type=click.Choice(FORMATS), default=None, help="Output format."),
        click.Option(["--output", "cmd_output"], default=None, help="Write output to FILE."),
        click.Option(["--quiet", "cmd_quiet"], is_flag=True, default=None, help="Print nothing on success."),
    ]

    @click.pass_obj
    def callback(ctx: Context, /, **kwargs: Any) -> None:
        from ._run import run_operation

        for local, key in (("cmd_format", "format"), ("cmd_output", "output"), ("cmd_quiet", "quiet")):
            value = kwargs.pop(local)
            if value:
                ctx.options[key] = value
        sources = (kwargs.pop("input_file", None), kwargs.pop("input_data", None))
        given: dict[str, Any] = {}
        for name, value in kwargs.items():
            if value is None or value in ((), []):
                continue
            given[name] = _coerce(value, fields[name].annotation) if isinstance(value, tuple) else value
        run_operation(ctx, spec, sources, given)

    return OperationCommand(
        spec,
        name=spec.cli.action if spec.cli else spec.name,
        params=params,
        callback=callback,
        help=spec.summary + ("\n\n" + spec.description if spec.description else ""),
    )
