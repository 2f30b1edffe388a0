"""Checking the merged configuration: every key against its group's model at every level (an unknown or retired
key is an error, not a default), then each given group validated on its own and the others taken as they are."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pydantic

from ..errors import ConfigurationError
from .group import SettingsGroup, inputs, model_of
from .messages import invalid, unknown
from .provider import driver_names
from .settings import Settings

__all__ = ["validate"]


def validate(merged: dict[str, Any], sources: Mapping[str, str], flat_keys: Iterable[str]) -> Settings:
    """Settings from the merged tree: given groups validated one by one, absent ones at their defaults.
    `flat_keys`: the top-level keys other than groups that a configuration may give (named in an error)."""
    data = dict(merged)
    values: dict[str, Any] = {}
    for name, info in Settings.model_fields.items():
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, SettingsGroup)):
            continue
        raw = data.pop(name, None)
        if isinstance(raw, Mapping):
            raw = _checked(name, model, raw, sources)
        try:
            values[name] = model.model_construct() if raw is None else model.model_validate(raw)
        except pydantic.ValidationError as exc:
            raise invalid(exc, (name,), sources) from None
    for key in data:
        groups = [k for k in Settings.model_fields if k not in ("sources", "config_file")]
        raise unknown(key, [*groups, *flat_keys], sources)
    return Settings.model_construct(**values)


def _checked(
    prefix: str, model: type[SettingsGroup], raw: Mapping[str, Any], sources: Mapping[str, str]
) -> dict[str, Any]:
    """`raw` with every key checked against `model`, at every level: an unknown key raises (naming the
    closest valid one), a retired one raises with what replaces it, and an open sub-group (a provider
    driver's) is validated by its own model."""
    fields = inputs(model)
    for key, value in raw.items():
        dotted = f"{prefix}.{key}"
        if key in model.retired:
            source = sources.get(dotted, "default")
            raise ConfigurationError(
                f"Configuration key {dotted!r} (from {source}) {model.retired[key]}.",
                key=dotted,
                source=source,
                details={"field": dotted, "expected": None},
            )
        field = fields.get(key)
        if field is not None:
            sub = model_of(field)
            if sub is not None and isinstance(value, Mapping):
                _checked(dotted, sub, value, sources)
            continue
        if model.open_groups and isinstance(value, Mapping):
            try:
                sub = model.sub_group(key)
            except LookupError:
                raise unknown(dotted, [*(f"{prefix}.{k}" for k in fields), *_open_names(prefix)], sources) from None
            if sub is not None:
                _checked(dotted, sub, value, sources)
                try:
                    sub.model_validate(value)
                except pydantic.ValidationError as exc:
                    raise invalid(exc, (*prefix.split("."), key), sources) from None
            continue
        raise unknown(dotted, [f"{prefix}.{k}" for k in fields], sources)
    return dict(raw)


def _open_names(prefix: str) -> list[str]:
    """The sub-groups an open group may hold (the provider drivers installed), for an unknown key's hint."""
    return [f"{prefix}.{n}" for n in driver_names()]
