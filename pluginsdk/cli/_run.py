"""Running one operation from the CLI: input (file, JSON text, arguments) -> strategy -> SDK -> output.

The active scheduler strategy (`--scheduler`, else `scheduler.type`) turns the `-f FILE` / `-d JSON`
object into parameters and renders the result; arguments and options given on the command line win
over the input object. Every failure, bad input included, becomes the error envelope and exit 1.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._output import emit, emit_error

if TYPE_CHECKING:
    from ..operations import OperationSpec
    from ..schedulers._base import Strategy
    from . import Context

__all__ = ["run_operation"]


def _read_input(input_file: str | None, input_data: str | None) -> dict[str, Any]:
    from ..errors import ValidationError

    data: dict[str, Any] = {}
    for label, text, suffix in (
        ("--file", _read_text(input_file) if input_file else None, input_file or ""),
        ("--data", input_data, ".json"),
    ):
        if text is None:
            continue
        try:
            if suffix.endswith((".yaml", ".yml")):
                import yaml

                value = yaml.safe_load(text)
            else:
                value = json.loads(text) if text.strip() else {}
        except ValueError as exc:
            raise ValidationError(
                f"The {label} input is not valid {'YAML' if suffix.endswith(('.yaml', '.yml')) else 'JSON'}: {exc}",
                details={"field": label.lstrip("-"), "expected": "a JSON object"},
            ) from None
        if not isinstance(value, Mapping):
            raise ValidationError(
                f"The {label} input must be a JSON/YAML object.",
                details={"field": label.lstrip("-"), "expected": "a JSON object"},
            )
        data.update(value)
    return data


def _read_text(path: str) -> str:
    from ..errors import ValidationError

    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(
            f"Cannot read input file {path!r}: {exc.strerror}.", details={"field": "file", "value": path}
        ) from None


def _strategy_name(ctx: Context) -> str | None:
    return ctx.options.get("scheduler") or os.environ.get("PLUGIN_SCHEDULER") or None


def run_operation(
    ctx: Context, spec: OperationSpec, sources: tuple[str | None, str | None], given: dict[str, Any]
) -> None:
    """Run `spec` with the input object from `sources` (file, JSON text) overlaid by `given`; print; exit 1 on error."""
    import asyncio

    from ..errors import SDKError
    from ..schedulers import get_strategy

    state: dict[str, Strategy] = {}

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
            if ctx.options.get("dry_run") and "dry_run" in spec.cls.model_fields:
                params.setdefault("dry_run", True)
            if params.get("wait"):
                from .._entry import collect_garbage

                collect_garbage()
            if params.get("wait") and sys.stderr.isatty():
                from ._progress import run_with_progress

                result = await run_with_progress(sdk, spec, params)
            else:
                result = await sdk.call(spec.name, **params)
            return strategy.render(spec.name, params, result, sdk.settings)

    try:
        state["strategy"] = get_strategy(_strategy_name(ctx))
        output = asyncio.run(go())
    except SDKError as err:
        strategy = state.get("strategy")
        if strategy is not None and strategy.output_format and not ctx.options.get("format"):
            ctx.options["format"] = strategy.output_format
        envelope = err.to_envelope()
        emit_error(ctx, envelope, strategy.render_error(envelope) if strategy else None)
        sys.exit(1)
    emit(ctx, output)
