"""The errors a wrong configuration raises: each names the dotted key, where it was given (file, config dict,
environment variable, argument) and what was expected, and shows no secret."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from ..errors import ConfigurationError
from .group import SettingsGroup, inputs, model_of
from .masking import SECRET, mask_credentials
from .settings import Settings

__all__ = ["invalid", "unknown"]


def unknown(key: str, valid: list[str], sources: Mapping[str, str]) -> ConfigurationError:
    """The ConfigurationError of an unknown key: where it was given, and the valid key it most resembles."""
    import difflib  # only on this error path: the CLI's cold start never pays for it

    source = _origin(key, sources)
    leaf = key.rpartition(".")[2]
    by_leaf = {v.rpartition(".")[2]: v for v in valid}  # compared within the group: its prefix is no likeness
    close = [by_leaf[m] for m in difflib.get_close_matches(leaf, list(by_leaf), n=1, cutoff=0.6)]
    hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(sorted(valid))}."
    return ConfigurationError(
        f"Unknown configuration key {key!r} (from {source}){hint}",
        key=key,
        source=source,
        details={"field": key, "expected": close[0] if close else sorted(valid)},
    )


def _origin(key: str, sources: Mapping[str, str]) -> str:
    """Where `key` was given: its own source, else that of a key inside it (an unknown key holding a mapping),
    else that of the group holding it (`app` is one value of its layer)."""
    if key in sources:
        return sources[key]
    inside = next((source for k, source in sources.items() if k.startswith(key + ".")), None)
    if inside is not None:
        return inside
    parent = key.rpartition(".")[0]
    return _origin(parent, sources) if parent else "default"


def invalid(
    exc: pydantic.ValidationError | None,
    prefix: tuple[str, ...],
    sources: Mapping[str, str],
    value: Any = None,
    expected: str = "",
) -> ConfigurationError:
    """The ConfigurationError of the first wrong value, naming its dotted key and where it came from."""
    if exc is not None:
        err = exc.errors()[0]
        prefix, value, expected = (*prefix, *(str(p) for p in err["loc"])), err.get("input"), err["msg"]
        named = (err.get("ctx") or {}).get("key")  # a check across fields names the key it refuses (`wrong`)
        if named is not None:
            prefix, value = (*prefix, *(p for p in str(named).split(".") if p)), err["ctx"].get("value")
    key = ".".join(prefix)
    source = _origin(key, sources)
    return ConfigurationError(
        f"Invalid configuration value for {key!r} (from {source}): {expected}.",
        key=key,
        source=source,
        details={"field": key, "value": safe_value(key, value), "expected": expected},
    )


def safe_value(key: str, value: Any) -> Any:
    """A wrong value as an error may show it: `***` for a field the model marks SECRET, credentials masked."""
    if is_secret(key):
        return "***"
    shown = value if isinstance(value, str | int | float | bool) or value is None else str(value)
    return mask_credentials(shown) if isinstance(shown, str) else shown


def is_secret(dotted: str) -> bool:
    """Whether the model marks the field at `dotted` SECRET (a key of a group no model describes counts as one)."""
    model: type[pydantic.BaseModel] | None = Settings
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        field = inputs(model).get(part) if model is not None else None
        if field is not None:
            if SECRET in field.metadata:
                return True
            model = model_of(field)
            continue
        if model is not None and issubclass(model, SettingsGroup) and model.open_groups and i < len(parts) - 1:
            try:
                model = model.sub_group(part)
            except LookupError:
                model = None
            if model is None:
                return True
            continue
        return False
    return False
