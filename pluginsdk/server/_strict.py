"""JSON bodies are held to the types the OpenAPI document states.

Operations validate in pydantic's lax mode, which suits in-process callers, the CLI and query strings
(`"5"` for an integer, `0` for a boolean, one id where a list is expected). A JSON body is typed already, so
over REST a `0` where the document says boolean, or a string where it says array, is refused (400) instead
of coerced: each body is first checked against a strict (JSON-mode) model of the operation's body fields
with the same annotations. Values, required fields and unknown fields are the operation's own validation.

The check reads the body the door parsed already (strict Python mode) where that is the same as strict
JSON mode: for bodies of JSON's own types (strings, numbers, booleans, lists, objects, models and typed
dicts of them, validator functions). A field of a type that JSON spells as a string or an array (an enum,
a date, a tuple, a dataclass...) is checked on the raw bytes in JSON mode, as strict Python refuses them.

Where the body is the whole input (no path or query fields, no REST default) of such an operation, the check and the
build are one pass instead (`strict_operation`): the operation validated in strict mode (a subclass with
`strict=True`, never registered), its fields then taken by the operation class as they are; a body it
refuses goes through the check and the build, whose error names the field as the body spells it. Not where a
field validator runs before the type check (it could turn a wrong type into a right one), nor for a body
that gives a string for a list field (the operation takes `"id"` for `["id"]`; a JSON body may not).
"""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
from pydantic import AliasChoices, ConfigDict, Field, TypeAdapter

from ..operations import Operation, OperationSpec
from ..operations._base import alias_plan, validation_error

__all__ = ["check_body", "strict_operation"]


_CHECKERS: dict[str, tuple[TypeAdapter[Any], bool]] = {}
_JSON_NATIVE = frozenset(
    {
        "any", "none", "bool", "int", "float", "str", "literal", "list", "dict", "nullable", "default", "union",
        "model", "model-fields", "model-field", "typed-dict", "typed-dict-field", "definitions", "definition-ref",
        "function-plain", "function-before", "function-after", "no-info", "with-info",
    }
)  # fmt: skip
"""Core-schema kinds whose strict Python validation of parsed JSON is strict JSON validation."""


def _checker(spec: OperationSpec) -> tuple[TypeAdapter[Any], bool]:
    """The body's strict checker, and whether it may check the parsed body (see the module docstring)."""
    found = _CHECKERS.get(spec.name)
    if found is None:
        adapter = _build(spec)
        found = _CHECKERS[spec.name] = (adapter, _kinds(adapter.core_schema) <= _JSON_NATIVE)
    return found


def _kinds(schema: Any) -> set[str]:
    """Every schema kind named in a core schema (serialization schemas aside)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            kind = item.get("type")
            if isinstance(kind, str):
                found.add(kind)
            stack.extend(v for k, v in item.items() if k not in ("serialization", "metadata"))
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def _build(spec: OperationSpec) -> TypeAdapter[Any]:
    fields = spec.cls.model_fields
    assert spec.rest is not None
    if spec.rest.body_field is not None:
        f = fields[spec.rest.body_field]
        return TypeAdapter(_annotated(f.annotation, f.metadata), config=ConfigDict(strict=True))
    names = dict(alias_plan(spec.cls)[0])
    definitions: dict[str, Any] = {}
    for name in spec.body_fields:
        f = fields[name]
        choices = names.get(name) or (name, pydantic.alias_generators.to_camel(name))
        alias = AliasChoices(*choices)
        definitions[name] = (_annotated(f.annotation, f.metadata) | None, Field(None, validation_alias=alias))
    model = pydantic.create_model(
        f"{spec.cls.__name__}JsonBody", __config__=ConfigDict(strict=True, extra="ignore"), **definitions
    )
    return TypeAdapter(model)


def _annotated(annotation: Any, metadata: list[Any]) -> Any:
    return Annotated[annotation, *metadata] if metadata else annotation


def check_body(spec: OperationSpec, raw: bytes, body: Any) -> None:
    """Raise ValidationError (400) if a value of the body (`raw`, parsed as `body`) has not the JSON type its
    field states."""
    adapter, parsed = _checker(spec)
    try:
        if parsed:
            adapter.validate_python(body, strict=True)
        else:
            adapter.validate_json(raw, strict=True)
    except pydantic.ValidationError as exc:
        raise validation_error(exc, spec.name) from None


_STRICT: dict[str, tuple[type[Operation], frozenset[str]] | None] = {}


def _strict_class(spec: OperationSpec) -> tuple[type[Operation], frozenset[str]] | None:
    """The operation's strict subclass and the input names of its list fields, or None (see the module
    docstring: a type JSON spells as a string, or a field validator that runs before the type check)."""
    if spec.name in _STRICT:
        return _STRICT[spec.name]
    cls = spec.cls
    early = any(d.info.mode != "after" for d in cls.__pydantic_decorators__.field_validators.values())
    found: tuple[type[Operation], frozenset[str]] | None = None
    if not early and set(spec.body_fields) == set(spec.input_fields) and _checker(spec)[1]:
        strict: type[Operation] = type(f"{cls.__name__}StrictBody", (cls,), {"model_config": ConfigDict(strict=True)})
        strict.model_rebuild(force=True)  # built now (operations defer it), to read its schema
        if _kinds(strict.__pydantic_core_schema__) <= _JSON_NATIVE:
            aliases, list_keys = alias_plan(cls)
            lists = {name for key in list_keys for name, inputs in aliases if key in inputs}
            names = {*list_keys, *(i for name, inputs in aliases if name in lists for i in inputs)}
            found = (strict, frozenset(names))
    _STRICT[spec.name] = found
    return found


def strict_operation(spec: OperationSpec, body: dict[str, Any]) -> Operation | None:
    """The operation from a JSON body that is its whole input, checked and built in one strict pass; None
    where that pass would not be the same as `check_body` then `spec.build` (then the caller does those),
    and where it refuses the body: the two passes then name the field as the body spells it (`templateId`),
    where the strict subclass would name the attribute (`template_id`)."""
    plan = _strict_class(spec)
    if plan is None or any(isinstance(body.get(name), str) for name in plan[1]):
        return None
    try:
        checked = plan[0].model_validate(body)
    except pydantic.ValidationError:
        return None
    return spec.cls.model_construct(checked.model_fields_set, **checked.__dict__)
