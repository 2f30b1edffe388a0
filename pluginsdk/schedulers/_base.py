"""The strategy interface, which is also the `default` strategy: input as given, output as the SDK returns it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["Strategy"]


class Strategy:
    """Parses a command's input object and renders its result; subclasses serve one scheduler."""

    name: ClassVar[str] = "default"
    output_format: ClassVar[str | None] = None
    """Format forced on the CLI (schedulers read JSON even on a terminal); None keeps the user's choice."""

    def parse_input(self, operation: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """Operation parameters from the `-f FILE` / `-d JSON` object (default: the object's keys are the fields)."""
        return dict(data)

    def render(self, operation: str, params: Mapping[str, Any], result: Any, settings: Settings) -> Any:
        """What the caller sees for `result` of `operation` run with `params` (default: the full record)."""
        return result.model_dump(mode="json") if hasattr(result, "model_dump") else result

    def render_error(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """The failure output (default: the error envelope)."""
        return envelope
