"""Checking the merged configuration: every key against its group's model at every level (an unknown or retired
key is an error, not a default), then each given group validated on its own and the others taken as they are.
The errors name the dotted key, where it was given (file, config dict, environment variable, argument) and
what was expected, and show no secret."""

from collections.abc import Iterable, Mapping
from typing import Any

import pydantic

from ..errors import ConfigurationError
from .group import SECRET, LazyGroups, SettingsGroup, inputs, mask_credentials, model_of
from .provider import driver_names
from .settings import LAZY_GROUPS, Settings

__all__ = ["validate"]


def validate(merged: dict[str, Any], sources: Mapping[str, str], flat_keys: Iterable[str]) -> Settings:
    """Settings from the merged tree: given groups validated one by one, absent ones at their defaults.
    `flat_keys`: the top-level keys other than groups that a configuration may give (named in an error)."""
    data = dict(merged)
    values: dict[str, Any] = {}
    groups: list[str] = []
    for name, info in Settings.model_fields.items():
        model = info.annotation
        if isinstance(model, type) and issubclass(model, SettingsGroup):
            groups.append(name)
            raw = data.pop(name, None)
            values[name] = model.model_construct() if raw is None else _validated(name, model, raw, sources)
    for name in LAZY_GROUPS:  # one not given stays unbuilt: `Settings` makes it from its defaults when read
        groups.append(name)
        raw = data.pop(name, None)
        if raw is not None:
            values[name] = _validated(name, Settings.lazy_model(name), raw, sources)
    for key in data:
        raise _unknown(key, [*groups, *flat_keys], sources)
    return Settings.of(values)


def _validated(name: str, model: type[SettingsGroup], raw: Any, sources: Mapping[str, str]) -> SettingsGroup:
    """The group `name` given as `raw`, every key checked and its values validated by `model`."""
    if isinstance(raw, Mapping):
        raw = _checked(name, model, raw, sources)
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise _invalid(exc, (name,), sources) from None


def _checked(
    prefix: str, model: type[SettingsGroup], raw: Mapping[str, Any], sources: Mapping[str, str]
) -> dict[str, Any]:
    """`raw` with every key checked against `model`, at every level: an unknown key raises (naming the
    closest valid one), a retired one raises with what replaces it, and an open sub-group (a provider
    driver's) is validated by its own model."""
    fields = inputs(model)
    lazy = model if issubclass(model, LazyGroups) else None
    known = [*fields, *(lazy.lazy_groups if lazy else ())]
    out = dict(raw)
    for key, value in raw.items():
        dotted = f"{prefix}.{key}"
        if key in model.retired:
            raise _retired(dotted, model.retired[key], sources)
        field = fields.get(key)
        if field is not None:
            sub = model_of(field)
            if sub is not None and isinstance(value, Mapping):
                _checked(dotted, sub, value, sources)
        elif lazy is not None and key in lazy.lazy_groups:  # validated here, where the error can name its key
            out[key] = _validated(dotted, lazy.lazy_model(key), value, sources)  # the group's model keeps it
        elif model.open_groups and isinstance(value, Mapping):
            _check_open(prefix, model, key, value, known=known, sources=sources)
        else:
            raise _unknown(dotted, [f"{prefix}.{k}" for k in known], sources)
    return out


def _retired(key: str, replaced_by: str, sources: Mapping[str, str]) -> ConfigurationError:
    """The ConfigurationError of a retired key: where it was given, and what replaces it."""
    source = sources.get(key, "default")
    return ConfigurationError(
        f"Configuration key {key!r} (from {source}) {replaced_by}.",
        key=key,
        source=source,
        details={"field": key, "expected": None},
    )


def _check_open(
    prefix: str,
    model: type[SettingsGroup],
    key: str,
    value: Mapping[str, Any],
    *,
    known: list[str],
    sources: Mapping[str, str],
) -> None:
    """A sub-group of an open group (a provider driver's), validated by its own model; a name no installed
    driver has is an unknown key."""
    dotted = f"{prefix}.{key}"
    try:
        sub = model.sub_group(key)
    except LookupError:
        raise _unknown(dotted, [*(f"{prefix}.{k}" for k in known), *_open_names(prefix)], sources) from None
    if sub is not None:
        _checked(dotted, sub, value, sources)
        try:
            sub.model_validate(value)
        except pydantic.ValidationError as exc:
            raise _invalid(exc, (*prefix.split("."), key), sources) from None


def _open_names(prefix: str) -> list[str]:
    """The sub-groups an open group may hold (the provider drivers installed), for an unknown key's hint."""
    return [f"{prefix}.{n}" for n in driver_names()]


def _unknown(key: str, valid: list[str], sources: Mapping[str, str]) -> ConfigurationError:
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


def _invalid(
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
        details={"field": key, "value": _safe_value(key, value), "expected": expected},
    )


def _safe_value(key: str, value: Any) -> Any:
    """A wrong value as an error may show it: `***` for a field the model marks SECRET, credentials masked."""
    if _is_secret(key):
        return "***"
    shown = value if isinstance(value, str | int | float | bool) or value is None else str(value)
    return mask_credentials(shown) if isinstance(shown, str) else shown


def _is_secret(dotted: str) -> bool:
    """Whether the model marks the field at `dotted` SECRET (a key of a group no model describes counts as one)."""
    model: type[pydantic.BaseModel] | None = Settings
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if model is not None and issubclass(model, LazyGroups) and part in model.lazy_groups:
            model = model.lazy_model(part)
            continue
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
