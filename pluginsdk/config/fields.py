"""Field types of the settings models that read values given as text (environment, YAML) strictly, and `wrong`,
the error of a check across fields that names the key it refuses."""

from typing import Annotated, Any

from pydantic import BeforeValidator, Strict
from pydantic_core import PydanticCustomError

__all__ = ["Flag", "FlagOrBlank", "Number", "OptionalFlag", "OptionalText", "Texts", "Whole", "wrong"]


def _flag(value: Any) -> Any:
    """`true`/`false`, also as text in any case; any other value is left for the strict check to refuse."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def _flag_or_blank(value: Any) -> Any:
    """As `_flag`, and empty text is `false`."""
    return False if isinstance(value, str) and not value.strip() else _flag(value)


def _number(value: Any) -> Any:
    """A number or numeric text, never a boolean (`true` is no count)."""
    if isinstance(value, bool):
        raise PydanticCustomError("number", "expected a number, not true or false")
    return value


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


def _texts(value: Any) -> Any:
    """A list of text, or one text of comma-separated items."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


Flag = Annotated[bool, Strict(), BeforeValidator(_flag)]
"""`true` or `false` (also as text): no other value, so a vague setting is an error rather than a guess."""
OptionalFlag = Annotated[bool | None, Strict(), BeforeValidator(_flag)]
"""As `Flag`, or unset."""
FlagOrBlank = Annotated[bool, Strict(), BeforeValidator(_flag_or_blank)]
"""As `Flag`, and empty text is `false`."""
Whole = Annotated[int, BeforeValidator(_number)]
Number = Annotated[float, BeforeValidator(_number)]
Texts = Annotated[tuple[str, ...], BeforeValidator(_texts)]
OptionalText = Annotated[str | None, BeforeValidator(_blank_is_none)]
"""Text, where empty text is unset."""


def wrong(key: str, value: Any, expected: str) -> PydanticCustomError:
    """A check across fields failed: `key` (relative to the model checked) is the wrong one, `expected` says why."""
    return PydanticCustomError("config", expected, {"key": key, "value": value})
