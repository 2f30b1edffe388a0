"""Running one operation from the CLI: input (file, JSON text, arguments) -> strategy -> SDK -> output.

The active scheduler strategy (`--scheduler`, else `scheduler.type`) turns the `-f FILE` / `-d JSON`
object into parameters and renders the result; arguments and options given on the command line win
over the input object. Every failure, bad input included, becomes the error envelope and exit 1 (a file
input past the bounds of `pluginsdk.files` — size, alias expansion, nesting — exits 2, a usage error); a
result short of what was asked exits with the code `_exit.outcome` gives it (the result still printed).

`--output` is checked before anything runs; a write that fails afterwards prints the result on stdout
and exits OUTPUT_FAILED. `machines request --wait` submits under an id made here, so Ctrl-C can name
the request it leaves running.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from ..errors import ValidationError
from ._output import check_output, emit, emit_error, output_format, render

if TYPE_CHECKING:
    from ..operations import OperationSpec
    from ..schedulers._base import Strategy
    from . import Context

__all__ = ["run_operation"]

_LISTINGS = {
    "TEMPLATE_NOT_FOUND": "templates list",
    "REQUEST_NOT_FOUND": "requests list",
    "MACHINE_NOT_FOUND": "machines list",
}
"""The command that lists what a not-found id could have been."""

_PROTECTED = "a template not protected"
"""`details.expected` of the refusal of a protected template's launch (backends/local/provisioning/readiness.py)."""

_LOCKOUT_FIELD = "policy"
"""`details.field` of the refusal of a change that would leave nobody able to administer roles."""


def _hint(envelope: Mapping[str, Any]) -> str | None:
    """The CLI command that helps after this error, as a sentence for stderr, or None. The engine's errors
    state facts and name no CLI command (REST and MCP callers share them): the CLI adds its own."""
    code = envelope.get("error_code")
    if code in _LISTINGS:
        return f"See `pluginsdk {_LISTINGS[code]}` for the ones that exist."
    details = envelope.get("details") or {}
    if code == "VALIDATION_ERROR" and details.get("field") == _LOCKOUT_FIELD:
        return "An operator with access to the store recovers with `pluginsdk auth break-glass --user ID`."
    if details.get("expected") == _PROTECTED:
        if details.get("source") == "store":
            return f"Clear it with `pluginsdk templates update {details.get('value')}`."
        return "Clear it by fixing the template's file, then `pluginsdk templates refresh`."
    return None


class InputFileRefused(ValidationError):
    """A file input that cannot be used as given (too large, aliases expanding past the limit, nested too
    deep, unreadable): a usage error, exit code 2 (1 under a scheduler strategy)."""


def _read_input(input_file: str | None, input_data: str | None) -> dict[str, Any]:
    from ..files import InputTooLargeError, load_json

    data: dict[str, Any] = {}
    for label, text, name in (
        ("--file", _read_text(input_file) if input_file else None, input_file or ""),
        ("--data", input_data, ""),
    ):
        if text is None:
            continue
        yaml_file = name.lower().endswith((".yaml", ".yml"))
        where = f"input file {name!r}" if name else f"{label} input"
        try:
            if yaml_file:
                from ..files import load_yaml

                value = load_yaml(text, name)
            else:
                value = load_json(text)
        except InputTooLargeError as exc:
            raise _refused(f"The {where} is refused: {exc}.", label, name) from None
        except ValueError as exc:
            details: dict[str, Any] = {"field": label.lstrip("-"), "expected": "a JSON object"}
            if name:
                details["value"] = name
            line = getattr(exc, "line", None)  # YamlSyntaxError / JsonSyntaxError
            column = getattr(exc, "column", None)
            if line is not None:
                details |= {"line": line, "column": column}
            raise ValidationError(
                f"The {where} is not valid {'YAML' if yaml_file else 'JSON'}: {exc}", details=details
            ) from None
        if not isinstance(value, Mapping):
            raise ValidationError(
                f"The {where} must be a JSON/YAML object.",
                details={"field": label.lstrip("-"), "expected": "a JSON object"},
            )
        data.update(value)
    return data


def _refused(message: str, label: str, name: str) -> InputFileRefused:
    from ..files import MAX_DEPTH, MAX_INPUT_BYTES

    details: dict[str, Any] = {"field": label.lstrip("-"), "expected": f"at most {MAX_INPUT_BYTES} bytes, "
                               f"aliases expanded, and {MAX_DEPTH} levels (docs/input.md)"}  # fmt: skip
    if name:
        details["value"] = name
    return InputFileRefused(message, details=details)


def _read_text(path: str) -> str:
    from ..files import InputTooLargeError, read_bounded

    try:
        return read_bounded(path)
    except InputTooLargeError as exc:
        raise _refused(f"The input file {path!r} is refused: {exc}.", "--file", path) from None
    except OSError as exc:
        raise ValidationError(
            f"Cannot read input file {path!r}: {exc.strerror}.", details={"field": "file", "value": path}
        ) from None
    except UnicodeDecodeError:
        raise ValidationError(
            f"Input file {path!r} is not UTF-8 text.", details={"field": "file", "value": path}
        ) from None


def _ask_secrets(spec: OperationSpec, params: dict[str, Any]) -> bool:
    """Ask for a required secret (a password) that was not given: hidden on a terminal, else one stdin line.

    A password never has to be written on the command line, where shell history and `ps` would keep it.
    Returns whether a line of piped stdin was read (so the input is meant to come from there).
    """
    piped = False
    fields = spec.cls.model_fields
    for name in getattr(spec.cls, "secret_fields", ()):
        field = fields.get(name)
        if field is None or not field.is_required() or params.get(name) not in (None, ""):
            continue
        label = name.replace("_", " ").capitalize()
        if sys.stdin.isatty():
            confirm = name.startswith(("new_", "proposed_"))
            params[name] = click.prompt(label, hide_input=True, err=True, confirmation_prompt=confirm)
        else:
            params[name] = sys.stdin.readline().rstrip("\r\n")
            piped = True
    return piped


def _strategy_name(ctx: Context) -> str | None:
    return ctx.options.get("scheduler") or os.environ.get("PLUGIN_SCHEDULER") or None


def _check_dry_run(ctx: Context, spec: OperationSpec) -> None:
    """`--dry-run` on a command that cannot pretend is refused: running it for real would surprise."""
    if ctx.options.get("dry_run") and "dry_run" not in spec.cls.model_fields:
        action = f"{spec.cli.group} {spec.cli.action}" if spec.cli else spec.name
        raise click.UsageError(f"`{action}` has no dry run; drop --dry-run (it would run for real).")


def run_operation(
    ctx: Context, spec: OperationSpec, sources: tuple[str | None, str | None], given: dict[str, Any]
) -> None:
    """Run `spec` with the input object from `sources` (file, JSON text) overlaid by `given`; print; exit."""
    import asyncio

    from ..errors import SDKError
    from ..schedulers import get_strategy
    from ._exit import ERROR, INTERRUPTED, OK, USAGE, missing_ids, outcome

    check_output(ctx.options.get("output"))
    _check_dry_run(ctx, spec)
    state: dict[str, Any] = {}

    async def go() -> Any:
        from ..sdk import PluginSDK

        async with PluginSDK(
            config_path=ctx.options.get("config"),
            backend=ctx.options.get("backend"),
            scheduler=ctx.options.get("scheduler"),
        ) as sdk:
            strategy = state["strategy"] = get_strategy(sdk.settings.scheduler.type)
            if strategy.output_format and not ctx.options.get("format"):
                ctx.options["format"] = strategy.output_format
            raw = _read_input(*sources)
            whole = spec.rest.body_field if spec.rest else None
            if whole and raw and whole not in raw:  # the file is the one body field (templates validate)
                raw = {whole: raw}
            params = strategy.parse_input(spec.name, raw) | given
            piped = _ask_secrets(spec, params)
            if ctx.options.get("dry_run"):
                params.setdefault("dry_run", True)
            if params.get("wait") and spec.name == "create_request":
                result = await _wait(sdk, spec, params, state)
            else:
                result = await sdk.call(spec.name, **params)
            if spec.name == "login":
                from ._challenge import answer_challenges

                result = await answer_challenges(sdk, params, result, piped=piped)
            timed_out = state.get("elapsed", 0.0) >= float(params.get("timeout") or 3600)
            code = outcome(spec.name, params, result, timed_out=timed_out)
            state["code"] = code if strategy.name == "default" else OK
            state["missing"] = missing_ids(spec.name, params, result)
            return strategy.render(spec.name, params, result, sdk.settings)

    try:
        state["strategy"] = get_strategy(_strategy_name(ctx))
        output = asyncio.run(go())
    except SDKError as err:
        strategy: Strategy | None = state.get("strategy")
        if strategy is not None and strategy.output_format and not ctx.options.get("format"):
            ctx.options["format"] = strategy.output_format
        envelope = err.to_envelope()
        emit_error(ctx, envelope, strategy.render_error(envelope) if strategy else None)
        if (advice := _hint(envelope)) is not None:
            click.echo(advice, err=True)
        usage = isinstance(err, InputFileRefused) and (strategy is None or strategy.name == "default")
        sys.exit(USAGE if usage else ERROR)
    except KeyboardInterrupt:
        _interrupted(ctx, state)
        sys.exit(INTERRUPTED)
    emit(ctx, output)
    if state.get("missing") and state.get("code") == ERROR:
        kind = "Request" if spec.name == "get_request_status" else "Machine"
        listing = "requests list" if kind == "Request" else "machines list"
        click.echo(f"Error: {kind}(s) not found: {', '.join(state['missing'])}.", err=True)
        click.echo(f"See `pluginsdk {listing}` for the ones that exist.", err=True)
    sys.exit(state.get("code", OK))


async def _wait(sdk: Any, spec: OperationSpec, params: dict[str, Any], state: dict[str, Any]) -> Any:
    """Submit under an id made here (so Ctrl-C can name it), then wait with progress on a terminal."""
    from .._gc import collect_garbage
    from ..constants import new_request_id
    from ._progress import run_with_progress

    collect_garbage()
    params.setdefault("request_id", new_request_id())
    state["request_id"] = params["request_id"]

    def seen(progress: Any) -> None:
        state["submitted"] = True
        state["elapsed"] = progress.elapsed

    return await run_with_progress(sdk, spec, params, seen)


def _interrupted(ctx: Context, state: dict[str, Any]) -> None:
    """Ctrl-C: say which request goes on and how to follow it (stderr; the envelope too in JSON/YAML)."""
    if sys.stderr.isatty():
        click.echo(err=True)  # end a progress line
    request_id = state.get("request_id")
    if request_id is None:
        click.echo("Interrupted.", err=True)
        return
    submitted = "was submitted and goes on" if state.get("submitted") else "may have been submitted"
    message = (
        f"Interrupted while waiting: request {request_id} {submitted} without this command. "
        f"Follow it with `pluginsdk requests status {request_id}`; cancel it with "
        f"`pluginsdk requests cancel {request_id}`."
    )
    if output_format(ctx) in ("json", "yaml"):
        envelope = {
            "success": False,
            "error": message,
            "error_code": "INTERRUPTED",
            "details": {"request_id": request_id},
        }
        click.echo(render(ctx, envelope))
    click.echo(message, err=True)
