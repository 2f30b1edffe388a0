"""Click commands built from operation specs: positional args from the binding, every other field an option."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import click

from ._output import FORMATS

if TYPE_CHECKING:
    from ..operations import OperationSpec
    from . import Context

__all__ = ["command_for", "find_spec"]


def find_spec(group: str, action: str) -> OperationSpec | None:
    """The catalog entry bound to `pluginsdk GROUP ACTION` (imports the catalog)."""
    from .._lazy import COMMANDS
    from ..operations import CATALOG

    name = COMMANDS.get(f"{group} {action}")
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
    """`X | None` -> X, `Annotated[X, ...]` -> X."""
    import typing

    if typing.get_origin(annotation) is typing.Annotated:
        return _base(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    return next(a for a in args if a is not type(None)) if type(None) in args else annotation


def _is_list(annotation: Any) -> bool:
    import typing

    return typing.get_origin(_base(annotation)) is list


class FieldArgument(click.Argument):
    """A positional argument that may come from `-f`/`-d` instead: optional to click, shown bare when the
    operation requires it (`TEMPLATE_ID COUNT`, not `[TEMPLATE_ID] [COUNT]`)."""

    def __init__(self, name: str, *, field_required: bool, **kwargs: Any) -> None:
        super().__init__([name], required=False, **kwargs)
        self.field_required = field_required

    def make_metavar(self, ctx: click.Context) -> str:
        var = super().make_metavar(ctx)
        return var.replace("[", "").replace("]", "") if self.field_required else var


class FieldOption(click.Option):
    """An option of one input field: `[required]` and the operation's default shown in help, not enforced
    by click (the value may come from `-f`/`-d`; the operation validates)."""

    def __init__(self, *args: Any, field_required: bool = False, default_text: str | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.field_required = field_required
        self.default_text = default_text

    def get_help_extra(self, ctx: click.Context) -> Any:
        extra = super().get_help_extra(ctx)
        if self.field_required:
            extra["required"] = "required"
        if self.default_text:
            extra["default"] = self.default_text
        return extra


def _argument_extra(param: FieldArgument) -> str:
    """`[required; INTEGER]`-style notes of a positional argument (click shows none for arguments)."""
    notes = ["required" if param.field_required else "optional"]
    if param.type in (click.INT, click.FLOAT):
        notes.append(param.type.name.upper())
    if param.nargs == -1:
        notes.append("one or more" if param.field_required else "any number")
    return f"[{'; '.join(notes)}]"


def _param_type(annotation: Any) -> Any:
    """click.INT / click.FLOAT for numeric fields (help says INTEGER / FLOAT), else text."""
    base = _base(annotation)
    if base is int:
        return click.INT
    if base is float:
        return click.FLOAT
    return None


def _default_text(name: str, field: Any, base: Any) -> str | None:
    """The operation's default as help shows it (None when there is none worth showing)."""
    if field.is_required():
        return None
    value = field.get_default(call_default_factory=True)
    if base is bool:
        return name.replace("_", "-") if value else None
    if value is None or value in ("", [], {}, ()):
        return None
    if isinstance(value, list | tuple):
        return ",".join(_plain(v) for v in value)
    return _plain(value)


def _plain(value: Any) -> str:
    """An enum member as its value (`completed`), anything else as str()."""
    import enum

    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def _option_for(name: str, field: Any, secret: bool = False) -> click.Option:
    """The option of one input field; its help (the field doc) is prepended when help is shown."""
    import typing

    annotation = field.annotation
    base = _base(annotation)
    flag = "--" + name.replace("_", "-")
    shown = {"field_required": field.is_required(), "default_text": _default_text(name, field, base)}
    if base is bool:
        return FieldOption([f"{flag}/--no-{name.replace('_', '-')}"], default=None, **shown)
    if typing.get_origin(base) is list:
        items = "(repeatable JSON objects, or one JSON array)" if _objects(base) else "(repeatable, or comma-separated)"
        return FieldOption([flag], multiple=True, help=items, **shown)
    if typing.get_origin(base) is dict or base is dict:
        again = ", a key given again adds a value to its list" if _list_values(base) else ""
        return FieldOption(
            [flag], multiple=True, help=f"(key=value[,key=value...]{again}, or a JSON object; repeatable)", **shown
        )
    if secret:
        shown["field_required"] = False  # asked for, hidden, when not given
        hint = "(asked for, hidden, when not given; or one line of stdin when piped)" if field.is_required() else None
        return FieldOption([flag], default=None, help=hint, **shown)
    return FieldOption([flag], type=_param_type(annotation), default=None, required=False, **shown)


def _list_values(dict_type: Any) -> bool:
    """Whether a map field's values are lists (`user_roles`: user -> roles)."""
    import typing

    args = typing.get_args(dict_type)
    return len(args) == 2 and typing.get_origin(_base(args[1])) is list


def _objects(list_type: Any) -> bool:
    """Whether a list field holds objects (mappings or models): its items are given as JSON, not split on commas."""
    import types
    import typing

    args = typing.get_args(list_type)
    item = args[0] if args else None
    kinds = typing.get_args(item) if typing.get_origin(item) in (types.UnionType, typing.Union) else (item,)
    return any(k is dict or typing.get_origin(k) is dict or hasattr(k, "model_fields") for k in kinds)


def _list_items(value: Any, name: str) -> list[Any]:
    """`--ids a,b --ids c` -> [a, b, c]; an item written as JSON (`'{...}'` or `'[...]'`) is taken whole: an
    object as one item, an array as its items (a comma inside JSON never splits it)."""
    out: list[Any] = []
    for item in value:
        text = str(item)
        if text.lstrip()[:1] in ("{", "["):
            from ..files import parse_json

            try:
                parsed = parse_json(text)
            except ValueError as exc:
                raise click.BadParameter(
                    f"not valid JSON: {exc}.", param_hint=f"'--{name.replace('_', '-')}'"
                ) from None
            out.extend(parsed if isinstance(parsed, list) else [parsed])
        else:
            out.extend(v for v in text.split(",") if v != "")
    return out


def _coerce(value: Any, annotation: Any, name: str) -> Any:
    import typing

    base = _base(annotation)
    if typing.get_origin(base) is list:
        return _list_items(value, name)
    if typing.get_origin(base) is dict or base is dict:
        return _key_values(value, name, lists=_list_values(base))
    return value


def _key_values(items: Any, name: str, *, lists: bool = False) -> dict[str, Any]:
    """`--tags a=1,b=2 --tags c=3` or `--tags '{"a": "1"}'` -> one dict; anything else is a usage error.

    With `lists` (a map whose values are lists) each key=value adds the value to the key's list:
    `--user-roles dave=editor,dave=viewer` is `{"dave": ["editor", "viewer"]}`.
    """
    hint = f"'--{name.replace('_', '-')}'"
    out: dict[str, Any] = {}
    for item in items:
        text = str(item)
        if text.lstrip().startswith("{"):
            from ..files import parse_json

            try:
                value = parse_json(text)
            except ValueError as exc:
                raise click.BadParameter(f"not a JSON object: {exc}.", param_hint=hint) from None
            if not isinstance(value, dict):
                raise click.BadParameter("not a JSON object.", param_hint=hint)
            out.update(value)
            continue
        for pair in text.split(","):
            key, eq, val = pair.partition("=")
            if not eq or not key.strip():
                raise click.BadParameter(
                    f"{pair!r} is not key=value (give key=value[,key=value...] or a JSON object).", param_hint=hint
                )
            if lists:
                out.setdefault(key.strip(), []).append(val)
            else:
                out[key.strip()] = val
    return out


_NUMBER = re.compile(r"-\d+(\.\d+)?")


class OperationCommand(click.Command):
    """A catalog command whose option help is read from the field docstrings only when help is shown.

    Field docs come from the operation module's source (an AST parse); a run never shows them.
    """

    def __init__(self, spec: OperationSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.documented = False
        self.argument_docs: list[tuple[str, str]] = []

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """A negative number is an argument (`machines request web -1` -> "must be >= 1"), not an option.

        Only when every other dash-word is a known option: a misspelt option is still refused.
        """
        if any(_NUMBER.fullmatch(a) for a in args):
            known = {o for p in self.get_params(ctx) for o in (*p.opts, *p.secondary_opts)}
            words = [a.split("=", 1)[0] for a in args if a.startswith("-") and not _NUMBER.fullmatch(a)]
            if "--" not in args and all(w in known for w in words):
                ctx.ignore_unknown_options = True
        return super().parse_args(ctx, args)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not self.documented:
            self.documented = True
            docs = self.spec.field_docs()
            for param in self.params:
                if isinstance(param, click.Option) and param.name in docs:
                    param.help = " ".join(filter(None, (_one_line(docs[param.name]), param.help)))
            self.argument_docs = [
                (p.make_metavar(ctx), _one_line(f"{docs.get(p.name or '', '')} {_argument_extra(p)}"))
                for p in self.params
                if isinstance(p, FieldArgument)
            ]
        if self.argument_docs:
            with formatter.section("Arguments"):
                formatter.write_dl(self.argument_docs)
        super().format_options(ctx, formatter)


def _one_line(text: str) -> str:
    """A field doc as one run of words: a docstring's line breaks and indentation are not shown."""
    return " ".join(text.split())


def _help_text(spec: OperationSpec) -> str:
    """Summary and description, each paragraph's source line breaks and indentation folded (click rewraps)."""
    import inspect

    paragraphs = inspect.cleandoc(spec.description).split("\n\n") if spec.description else []
    return "\n\n".join([spec.summary, *(_one_line(p) for p in paragraphs if p.strip())])


def command_for(spec: OperationSpec) -> click.Command:
    """The click command of one operation; its callback hands the collected input to `run_operation`."""
    fields = spec.cls.model_fields
    params: list[click.Parameter] = []
    positional = spec.cli.args if spec.cli else ()
    secrets = set(getattr(spec.cls, "secret_fields", ()))
    for name in positional:
        field = fields[name]
        nargs = -1 if _is_list(field.annotation) else 1
        params.append(
            FieldArgument(name, nargs=nargs, field_required=field.is_required(), type=_param_type(field.annotation))
        )
    for name in spec.input_fields:
        if name not in positional:
            params.append(_option_for(name, fields[name], name in secrets))
    params += [
        click.Option(
            ["--file", "-f", "input_file"],
            metavar="FILE",
            default=None,
            help="Read the input object from a JSON/YAML file.",
        ),
        click.Option(
            ["--data", "-d", "input_data"], metavar="JSON", default=None, help="The input object as JSON text."
        ),
        click.Option(["--format", "cmd_format"], type=click.Choice(FORMATS), default=None, help="Output format."),
        click.Option(["--output", "cmd_output"], metavar="FILE", default=None, help="Write the result to FILE."),
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
            given[name] = _coerce(value, fields[name].annotation, name) if isinstance(value, tuple) else value
        run_operation(ctx, spec, sources, given)

    return OperationCommand(
        spec,
        name=spec.cli.action if spec.cli else spec.name,
        params=params,
        callback=callback,
        help=_help_text(spec),
    )
