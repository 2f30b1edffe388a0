"""The base of every configuration group's model, the sub-groups built on first use (`LazyGroups`), and how a
group is shown: fields marked SECRET as `***`, named provider instances by their drivers' models, credentials
in any other text masked (`Settings.redacted`, the errors a wrong value raises, reprs)."""

import re
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeGuard

import pydantic
from pydantic import ConfigDict

__all__ = [
    "INSTANCES",
    "SECRET",
    "LazyGroups",
    "SettingsGroup",
    "in_shown_order",
    "inputs",
    "mask_credentials",
    "masked",
    "model_of",
    "read_all",
]


class _Secret:
    """Marker of a configuration field whose value is a secret (`Annotated[str | None, SECRET]`)."""

    def __repr__(self) -> str:
        return "SECRET"


SECRET = _Secret()
"""Put in a field's `Annotated[...]`: the value is shown as `***` wherever the configuration is shown."""


_CREDENTIALS = (
    r"(?P<keep>[A-Za-z][A-Za-z0-9+.\-]*://[^:@/\s?#]*:)[^@\s]*(?=@)",  # scheme://user:PASSWORD@
    r"(?i)(?P<keep>\b(?:password|passwd|pwd|sslpassword)\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&;]*)",
)
"""A URL's userinfo password, and a DSN's or query string's `password=` part (libpq's keywords): compiled on
first use (`re`'s cache), not at import, since a CLI call that shows nothing never masks."""


def mask_credentials(text: str) -> str:
    """`text` with the passwords of URLs (`scheme://user:***@host`) and DSNs (`password=***`) masked."""
    for pattern in _CREDENTIALS:
        text = re.sub(pattern, lambda m: m.group("keep") + "***", text)
    return text


INSTANCES: dict[str, Any] = {"x-provider-instances": True}
"""Marks the field of named provider instances: each is shown masked by its driver's settings model."""


class SettingsGroup(pydantic.BaseModel):
    """Base of a configuration group's model: a third party's provider driver names its own as the class
    attribute `settings_model` (fields annotated `Annotated[..., SECRET]` are masked when shown)."""

    model_config = ConfigDict(extra="allow", validate_by_alias=True, validate_by_name=True, defer_build=True)

    open_groups: ClassVar[bool] = False
    """Whether a key that is not a field may hold a sub-group (a mapping): the provider drivers' own
    groups (`provider.local`, `provider.aws`, a third party's). Any other unknown key is an error."""
    retired: ClassVar[dict[str, str]] = {}
    """Keys that once meant something -> the error that says what replaces them."""

    @classmethod
    def sub_group(cls, name: str) -> type["SettingsGroup"] | None:
        """The model of the open sub-group `name`; None when no model describes it (its keys stay open)."""
        return None

    def __repr_args__(self) -> Any:
        """Reprs (logs, tracebacks) show what `Settings.redacted` shows: no secret, no credential."""
        read_all(self)
        shown = masked(type(self), self.model_dump(mode="json", by_alias=True))
        return list(shown.items())


class LazyGroups:
    """Mixed into a model (before its pydantic base) whose `lazy_groups` are built on first use; each has a
    property that reads it through `lazy_group`."""

    lazy_groups: ClassVar[dict[str, str]] = {}
    """Name -> model (`module.Class` in this package)."""
    shown_after: ClassVar[dict[str, str]] = {}
    """Name -> the key it is shown after (a field, or another lazy group); one not named here comes last."""

    if TYPE_CHECKING:  # the model's own (pydantic reads an annotation here as the extra values' type)
        __pydantic_extra__: dict[str, Any] | None

    @classmethod
    def lazy_model(cls, name: str) -> type["SettingsGroup"]:
        """The model of the lazily built sub-group `name`, its module imported now."""
        module, _, model_name = cls.lazy_groups[name].rpartition(".")
        model: type[SettingsGroup] = getattr(import_module(f"{__package__}.{module}"), model_name)
        return model

    @property
    def lazy_given(self) -> dict[str, Any]:
        """The lazy groups given or read so far, among the extra values."""
        if self.__pydantic_extra__ is None:
            self.__pydantic_extra__ = {}
        return self.__pydantic_extra__

    def lazy_group(self, name: str) -> "SettingsGroup":
        """The sub-group `name`: as given, else made from its model's defaults (valid by construction)."""
        group: SettingsGroup | None = self.lazy_given.get(name)
        if group is None:
            group = self.lazy_given[name] = self.lazy_model(name).model_construct()
        return group

    @pydantic.model_validator(mode="wrap")
    @classmethod
    def _with_lazy_groups(cls, data: Any, handler: pydantic.ModelWrapValidatorHandler[Self]) -> Self:
        """Validating the model validates the lazy groups given by their models (one validated already, as
        `load_settings` hands them, is taken as it is)."""
        if not isinstance(data, dict) or not cls.lazy_groups.keys() & data.keys():
            return handler(data)
        model = handler({k: v for k, v in data.items() if k not in cls.lazy_groups})
        for name in cls.lazy_groups.keys() & data.keys():
            model.lazy_given[name] = cls.lazy_model(name).model_validate(data[name])
        return model


def read_all(model: pydantic.BaseModel) -> None:
    """Every lazy group of `model` and of the groups it holds made, so a dump shows them all."""
    if isinstance(model, LazyGroups):
        for name in model.lazy_groups:
            model.lazy_group(name)
    for value in [*model.__dict__.values(), *(model.__pydantic_extra__ or {}).values()]:
        if isinstance(value, pydantic.BaseModel):
            read_all(value)


def in_shown_order(model: type[Any] | None, shown: dict[str, Any]) -> dict[str, Any]:
    """`shown` (a dumped value of `model`) with its lazy groups where `shown_after` puts them."""
    after: dict[str, str] = getattr(model, "shown_after", {})
    if not after:
        return shown
    out: dict[str, Any] = {}

    def put(key: str) -> None:
        out[key] = shown[key]
        for name, anchor in after.items():
            if anchor == key and name in shown:
                put(name)

    for key in shown:
        if key not in out and (key not in after or after[key] not in shown):
            put(key)
    return out


def masked(model: type[pydantic.BaseModel] | None, node: Any) -> Any:
    """`node` (a value of `model`, or of no model when None) as shown: see `Settings.redacted`."""
    if isinstance(node, str):
        return mask_credentials(node)
    if isinstance(node, list):
        return [masked(None, v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    fields = inputs(model) if model is not None else {}
    lazy = model if model is not None and issubclass(model, LazyGroups) else None
    for key, value in node.items():
        field = fields.get(key)
        if field is not None:
            out[key] = _masked_field(model, field, value)
        elif lazy is not None and key in lazy.lazy_groups:
            out[key] = masked(lazy.lazy_model(key), value)
        elif _is_group(model) and model.open_groups and isinstance(value, dict):
            out[key] = _masked_open(model, key, value)
        else:
            out[key] = masked(None, value)
    return in_shown_order(model, out)


def _is_group(model: type[pydantic.BaseModel] | None) -> TypeGuard[type[SettingsGroup]]:
    return model is not None and issubclass(model, SettingsGroup)


def _masked_open(model: type[SettingsGroup], key: str, value: dict[str, Any]) -> dict[str, Any]:
    try:
        sub = model.sub_group(key)
    except LookupError:
        sub = None
    if sub is None:  # nothing says which of its values are secret: none is shown
        return {k: "***" if v not in (None, "") else v for k, v in value.items()}
    shown: dict[str, Any] = masked(sub, value)
    return shown


def _masked_field(model: type[pydantic.BaseModel] | None, field: Any, value: Any) -> Any:
    """A field of `model` as shown: a SECRET one as `***`, named provider instances by their drivers' models."""
    if SECRET in field.metadata and value not in (None, ""):
        return "***"
    if field.json_schema_extra == INSTANCES and isinstance(value, dict) and _is_group(model):
        return {n: _masked_instance(model, g) for n, g in value.items()}
    return masked(model_of(field), value)


def _masked_instance(model: type[SettingsGroup], group: Any) -> Any:
    """A provider instance (a value of `model`'s instances field) as shown: its driver's settings masked by that
    driver's model."""
    if not isinstance(group, dict):
        return masked(None, group)
    shown = _masked_open(model, str(group.get("type")), {k: v for k, v in group.items() if k != "type"})
    return {"type": group.get("type"), **shown}


def inputs(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """A model's fields by the name a configuration gives them (the alias, when it has one)."""
    return {info.alias or name: info for name, info in model.model_fields.items()}


def model_of(field: Any) -> type[SettingsGroup] | None:
    """The group model a field holds (`SmtpSettings | None` -> SmtpSettings), else None."""
    annotation = field.annotation
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, SettingsGroup):
            return candidate
    return None
