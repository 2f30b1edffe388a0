"""The operation catalog: one pydantic class per capability, compiled once into an OperationSpec.

A class declares its fields (canonical snake_case names), its docstring (help
text), its result type and its bindings. At class creation it is turned into a
frozen `OperationSpec` — SDK name, REST path/query/body split, CLI group and
action, MCP tool names, policy route — and registered in `CATALOG`. The SDK,
server, remote client, CLI and MCP server read only specs; nothing is written
per operation in an interface. A bad binding fails at import, naming the class.
"""

import functools
import re
import types
import typing
from collections.abc import Iterator, Mapping, MutableMapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, overload

import pydantic
from pydantic import ConfigDict, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from .._lazy import Returning, Typed, declared_result
from ..errors import HandlerDiscoveryError, InvalidPaginationToken, ValidationError
from ..models import BaseModel
from ..models.identifiers import pattern_problem
from ..models.values import is_storable, value_problem

__all__ = [
    "CATALOG",
    "STORED_RULES",
    "Audit",
    "Catalog",
    "Cli",
    "Command",
    "Mcp",
    "Operation",
    "OperationSpec",
    "Policy",
    "Query",
    "Rest",
    "get_spec",
    "sdk_name",
    "utc_instant",
]

_PATH_PARAM = re.compile(r"{(\w+)}")

_NO_ENTRIES: Mapping[str, Any] = types.MappingProxyType({})
"""Shared read-only default of the bindings' mapping fields.

The bindings and OperationSpec are NamedTuples, not frozen dataclasses: a dataclass compiles its
methods when its module is imported (~2 ms a class), and every CLI call imports this module."""

# R_co: an operation's result type. `class ListTemplatesQuery(Query[TemplateList])` returns a `TemplateList`
# (`PluginSDK.execute`, `call`, the backends); unparametrized, `Operation` means `Operation[Any]`. The default
# matters to type checkers only: typing_extensions' TypeVar in `Generic[...]` costs ~0.7 M instructions of
# every CLI call (callgrind), so run time has a plain TypeVar.
if TYPE_CHECKING:
    from typing_extensions import TypeVar

    R_co = TypeVar("R_co", covariant=True, default=Any)
else:
    R_co = typing.TypeVar("R_co", covariant=True)

#: Global parameter aliases (spec "Parameter mapping"), applied before any operation is built.
GLOBAL_ALIASES: dict[str, tuple[str, ...]] = {
    "requested_count": ("count", "machine_count", "machineCount"),
    "provider_name": ("provider",),
}


class Rest(NamedTuple):
    """REST binding: method, path template (and alternative paths), success status.

    Path fields come from `{name}` in the path; for GET/DELETE every other input
    field is a query parameter, otherwise the body. `body_field` makes the whole
    JSON body one field (e.g. a raw template configuration). `camel` renders the
    response with camelCase keys (the auth-service routes).
    """

    method: str
    path: str
    status: int = 200
    alt_paths: tuple[str, ...] = ()
    query: tuple[str, ...] | None = None
    body_field: str | None = None
    camel: bool = False
    defaults: Mapping[str, Any] = _NO_ENTRIES
    """Field defaults that differ on REST (GetRequest: long=True)."""
    dry_run: str | None = None
    """The input flag that makes a create store nothing: when true the answer is 200, not `status` (201/202
    would claim an object that does not exist, and the document's links from it would lead nowhere)."""
    listing_b: tuple[str, ...] = ()
    """Paths (of `paths`) that answer as the provisioning spec's listing B writes the answer (`requestId`,
    `message`), in the OpenAPI document too."""
    too_many: str | None = None
    """Why the operation may answer 429 with `Retry-After` (its OpenAPI response says so): `throttled`, it
    checks or hashes a password or a TOTP code (the sign-in limits, the bound on concurrent hashing); `quota`,
    a quota can refuse it (docs/providers.md, "Quotas")."""

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.path, *self.alt_paths)


class Cli(NamedTuple):
    """CLI binding: `pluginsdk GROUP ACTION ARGS...`; other fields become --options."""

    group: str
    action: str
    args: tuple[str, ...] = ()


class Mcp(NamedTuple):
    """MCP binding: tool name (default: the SDK name) and extra tool names."""

    name: str | None = None
    extra: tuple[str, ...] = ()
    enabled: bool = True
    extra_names: Mapping[str, str] = _NO_ENTRIES
    """Field -> the name the extra tools advertise for it (spec: `request_machines (template_id, count)`);
    accepted because it is an alias of the field."""
    names: Mapping[str, str] = _NO_ENTRIES
    """Field -> the name every tool of the operation shows for it (the spec's query field: `request_id` of
    `get_request_status`); an alias of the field. A list field shown under it takes one item or a list."""


STORED_RULES = ("assignments", "replay")
"""Tier-2 rules of their own (`Policy.rule`): `assignments`, a write or delete of a user's set of role
assignments (each assignment it reads and changes decided); `replay`, a create whose caller-chosen id may
name an existing object (answered only to a caller that may read it)."""


TOO_MANY = ("throttled", "quota")
"""The reasons `Rest.too_many` may give."""


class Audit(NamedTuple):
    """What the audit log records of a command that ran (backends/local/auth/audit.py): one record per call,
    its target `target` named by the first of `ids` the input (else the result) holds."""

    target: str
    """The target type of the record (`template`, `request`, `role`, ...)."""
    ids: tuple[str, ...] = ()
    """Input (else result) fields holding the target's id (a list field: ids joined by commas)."""
    snapshot: bool = False
    """Record the target as stored before and after the change (secrets removed); off where the command is
    on a hot path (a launch) and its own record already tells what it did."""
    each_constraint: bool = False
    """The command writes several constraints: one record per constraint (a template import, a grant)."""


class Policy(NamedTuple):
    """Authorization binding.

    Tier 1 authorizes `route` (default: the REST path) with `method` (default:
    the REST method). Tier 2 authorizes `object_type` objects; `fields` maps the
    object's attribute names to operation fields so a decision can be made
    before the entity is loaded (no 404/403 oracle). An operation on one existing
    object names the field holding its id (`stored`): tier 2 then decides on the
    object as stored. Everything tier 2 needs to know about an operation is here,
    checked when the spec is compiled.
    """

    object_type: str | None = None
    fields: Mapping[str, str] = _NO_ENTRIES
    route: str | None = None
    method: str | None = None
    unauthenticated: bool = False
    category: str | None = None
    stored: str | None = None
    """The input field holding the id of the one existing `object_type` object the operation acts on: tier 2
    decides on that object as stored (a caller that may not read it gets its 404), and a read answers with
    the object decided on. A call that leaves the field empty names no stored object."""
    stored_unless: str | None = None
    """A field that, when given, means the call names no stored object (a configuration sent instead)."""
    changes: Mapping[str, str] = _NO_ENTRIES
    """Attribute -> field: attributes a change to the stored object sets when the field is given; the
    object as changed must be allowed the method too."""
    new_attributes: Mapping[str, str] = _NO_ENTRIES
    """Attribute -> field: attributes a created object carries beyond `fields`, decided on as well."""
    rule: str | None = None
    """A tier-2 rule of its own (one of `STORED_RULES`)."""
    audit: Audit | None = None
    """What the audit log records of this command; every command declares it or says in `unaudited` why not."""
    unaudited: str | None = None
    """Why this command is not in the audit log (a query never is)."""
    writes_policy: bool = False
    """The command writes constraints, roles or user roles: the lock-out guard checks it (no change may leave
    no one able to administer roles)."""
    lockout_probe: bool = False
    """Tier 1 on this operation's route and method is part of what makes someone an administrator who can
    give the administrator role back (backends/local/auth/lockout.py)."""


def _rewritten(cls: type["Operation"], data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with `cls`'s ignored fields dropped, each alias under its canonical name (two aliases with different
    values refused) and one id given where a list is expected made a list."""
    out = dict(data)
    for name in cls.ignored_fields:
        out.pop(name, None)
    aliases, list_keys = alias_plan(cls)
    for canonical, names in aliases:
        given = [a for a in names if a in out]
        if not given:
            continue
        if len(given) > 1 and len({repr(out[a]) for a in given}) > 1:
            raise PydanticCustomError(
                "alias_conflict",
                "{field} given twice with different values ({names})",
                {"field": canonical, "names": ", ".join(given)},
            )
        for a in given:
            value = out.pop(a)
            out[canonical] = value
    for key in list_keys:  # one id where a list is expected: ["id"]
        if isinstance(out.get(key), str):
            out[key] = [out[key]]
    return out


class Operation(BaseModel, Typed[R_co]):
    """Base of every command and query: strict input (unknown fields rejected), aliases applied, every value
    storable (`pluginsdk.models.values`: finite numbers, 64-bit integers, valid text, bounded nesting)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        allow_inf_nan=False,
        use_attribute_docstrings=False,
        defer_build=True,
        loc_by_alias=False,
    )

    kind: ClassVar[str] = "query"
    result_type: ClassVar[type[Any]] = dict
    rest: ClassVar[Rest | None] = None
    cli: ClassVar[Cli | None] = None
    mcp: ClassVar[Mcp] = Mcp()
    policy: ClassVar[Policy] = Policy()
    field_aliases: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Extra input names of this operation's fields (beside the global aliases and camelCase)."""
    ignored_fields: ClassVar[tuple[str, ...]] = ()
    """Input names accepted and dropped, by name (what a known client sends that means nothing here, e.g. the
    VAMS role form's `id`); every other unknown name stays an error."""
    bounds_own_input: ClassVar[bool] = False
    """Every value of this operation's REST body is held by the built operation as given (no validator drops or
    reshapes one, no `ignored_fields`) and `inputs_storable` checks each (finite numbers, nesting within
    `MAX_DEPTH`, which is the REST door's depth limit counted from the body): the door then does not walk a body
    that the one strict pass built (`pluginsdk/server/_wire.py`, `check_limits`). Set where bodies are large."""
    output_fields: ClassVar[tuple[str, ...]] = ()
    """Fields the engine sets on the operation object after it ran (spec: command output fields)."""
    if TYPE_CHECKING:  # not a runtime annotation: pydantic would evaluate it for each of ~160 subclasses
        spec: ClassVar["OperationSpec"]
    else:

        def __class_getitem__(cls, result: object) -> Returning:
            return Returning(cls, result)

    @model_validator(mode="before")
    @classmethod
    def _apply_aliases(cls, data: Any) -> Any:
        if type(data) is dict:  # the common input: nothing to rewrite (`_rewrites`) is answered without a copy
            renamed, list_keys = _rewrites(cls)
            if renamed.isdisjoint(data):
                for key in list_keys:  # a loop, not any() over a generator: every validation runs this
                    if isinstance(data.get(key), str):
                        break
                else:
                    return data
        return _rewritten(cls, data) if isinstance(data, Mapping) else data

    def inputs_storable(self) -> bool:
        """Whether every input value is storable (`pluginsdk.models.values`): the fast yes/no the check below runs
        first; an operation with a large input of a known shape answers it more cheaply (it must never say yes
        where `is_storable(self)` says no)."""
        return is_storable(self)

    def check_together(self) -> None:
        """Checks across fields, run by the validator below once every value is storable: raise ValueError
        saying what is wrong. A subclass overrides it rather than adding a validator of its own: each is one more
        layer of every validation (≈ 0.5 µs of a subject check's input)."""

    @model_validator(mode="after")
    def _storable(self) -> "Operation":
        """Free-form values (configuration, tags, additional data) too: no interface lets NaN, a lone
        surrogate, NUL or an out-of-range integer through to the store or a JSON encoder. Then
        `check_together`."""
        if not self.inputs_storable():
            found = value_problem(self)
            if found is not None:
                where, problem = found
                raise PydanticCustomError("unstorable_value", "{problem}", {"field": where, "problem": problem})
        self.check_together()
        return self

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        result = declared_result(cls)
        if result is not None:
            cls.result_type = result
        if cls.__name__.endswith(("Command", "Query")) and cls.__module__ != __name__:
            spec = OperationSpec.compile(cls)
            cls.spec = spec
            CATALOG.register(spec)


class Command(Operation[R_co]):
    """An operation that changes state."""

    kind: ClassVar[str] = "command"


class Query(Operation[R_co]):
    """An operation that only reads."""

    kind: ClassVar[str] = "query"


@functools.cache
def alias_plan(cls: type[Operation]) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], tuple[str, ...]]:
    """Per class, computed once: (field, every input name for it) for aliased fields, and the input keys of
    list fields (snake_case and camelCase)."""
    aliases = tuple(
        (canonical, tuple(dict.fromkeys((canonical, to_camel(canonical), *names))))
        for canonical, names in {**GLOBAL_ALIASES, **cls.field_aliases}.items()
        if canonical in cls.model_fields
    )
    list_keys = tuple(key for name in list_fields(cls) for key in dict.fromkeys((name, to_camel(name))))
    return aliases, list_keys


@functools.cache
def _rewrites(cls: type[Operation]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The input keys `_apply_aliases` rewrites or drops (every alias but the field's own name, and
    `ignored_fields`), and the keys of list fields (one id given for a list is rewritten too)."""
    aliases, list_keys = alias_plan(cls)
    renamed = frozenset([*(a for canonical, names in aliases for a in names if a != canonical), *cls.ignored_fields])
    return renamed, list_keys


@functools.cache
def list_fields(cls: type[Operation]) -> tuple[str, ...]:
    """Fields typed as a list (optionally | None)."""
    out = []
    for name, f in cls.model_fields.items():
        args = (
            typing.get_args(f.annotation) if typing.get_origin(f.annotation) in (types.UnionType, typing.Union) else ()
        )
        candidates = [a for a in args if a is not type(None)] or [f.annotation]
        if any(typing.get_origin(a) is list for a in candidates):
            out.append(name)
    return tuple(out)


def utc_instant(value: str | None) -> str | None:
    """An input time (ISO 8601; UTC when it names no zone) in the store's fixed-width UTC form, so comparing the
    text compares the times (the validators of time filters call it)."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def sdk_name(class_name: str) -> str:
    """`CreateRequestCommand` -> `create_request` (drop the suffix, snake_case)."""
    base = re.sub(r"(Command|Query)$", "", class_name)
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", base).lower()


# -- compiling a class into its spec: one check or derivation per binding ------------------------------
def _described(op: type[Operation], where: str) -> str:
    """The class's docstring (its first line is the help text); the class must declare its result type."""
    doc = (op.__doc__ or "").strip()
    if not doc:
        raise HandlerDiscoveryError(f"{where} needs a docstring: its first line is the help text.")
    if op.result_type is dict:
        raise HandlerDiscoveryError(f"{where} must declare its result type: `class {op.__name__}(Query[Result])`.")
    return doc


def _input_fields(op: type[Operation], where: str) -> tuple[str, ...]:
    """Every field but the output fields (which must be fields)."""
    for out in op.output_fields:
        if out not in op.model_fields:
            raise HandlerDiscoveryError(f"{where}: output field {out!r} is not a field.")
    return tuple(f for f in op.model_fields if f not in op.output_fields)


def _path_fields(rest: Rest, inputs: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The `{name}` parameters of the path: fields, the same in every alternative path."""
    path_fields: tuple[str, ...] = ()
    for p in rest.paths:
        names = tuple(_PATH_PARAM.findall(p))
        if p != rest.path and set(names) != set(path_fields):
            raise HandlerDiscoveryError(f"{where}: alternative path {p!r} has other parameters.")
        path_fields = names
        for n in names:
            if n not in inputs:
                raise HandlerDiscoveryError(f"{where}: path parameter {{{n}}} is not a field.")
    return path_fields


def _rest_fields(
    rest: Rest | None, inputs: tuple[str, ...], where: str
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(path, query, body) fields: `{name}` in the path, then `Rest.query` if given, else the query for
    GET/DELETE and the body otherwise (FastAPI's rule)."""
    if rest is None:
        return (), (), ()
    path_fields = _path_fields(rest, inputs, where)
    rest_of = tuple(f for f in inputs if f not in path_fields)
    query_fields: tuple[str, ...] = ()
    body_fields: tuple[str, ...] = ()
    if rest.query is not None:
        unknown = set(rest.query) - set(rest_of)
        if unknown:
            raise HandlerDiscoveryError(f"{where}: query fields {sorted(unknown)} are not fields.")
        query_fields = rest.query
        body_fields = tuple(f for f in rest_of if f not in rest.query)
    elif rest.method in ("GET", "DELETE"):
        query_fields = rest_of
    else:
        body_fields = rest_of
    if rest.body_field is not None and rest.body_field not in body_fields:
        raise HandlerDiscoveryError(f"{where}: body_field {rest.body_field!r} is not a body field.")
    return path_fields, query_fields, body_fields


def _check_cli(cli: Cli | None, inputs: tuple[str, ...], where: str) -> None:
    for a in cli.args if cli is not None else ():
        if a not in inputs:
            raise HandlerDiscoveryError(f"{where}: CLI argument {a!r} is not a field.")


def _mcp_names(op: type[Operation], name: str, inputs: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The tool names (none if MCP is off); each extra name shown for a field must be one of its aliases."""
    for f, shown in {**op.mcp.names, **op.mcp.extra_names}.items():
        if f not in inputs or shown not in (*GLOBAL_ALIASES.get(f, ()), *op.field_aliases.get(f, ())):
            raise HandlerDiscoveryError(f"{where}: MCP extra name {shown!r} is not an alias of a field {f!r}.")
    return (op.mcp.name or name, *op.mcp.extra) if op.mcp.enabled else ()


def _check_policy(policy: Policy, method: str, inputs: tuple[str, ...], where: str) -> None:
    """The policy binding names real fields, and says how tier 2 decides: an operation naming an object by
    its fields is a create (POST), or acts on a stored object (`stored`), or has a rule of its own."""
    _check_policy_fields(policy, inputs, where)
    _check_policy_stored(policy, where)
    if policy.rule is not None and (policy.rule not in STORED_RULES or policy.stored):
        raise HandlerDiscoveryError(
            f"{where}: policy rule {policy.rule!r} is not one of {STORED_RULES}, or comes with a stored field."
        )
    if policy.object_type and policy.fields and method != "POST" and not (policy.stored or policy.rule):
        raise HandlerDiscoveryError(
            f"{where}: a {method} naming {policy.object_type} objects must say how tier 2 decides on them: "
            "Policy(stored=<the id field>) for one existing object, or Policy(rule=...)."
        )


def _check_policy_stored(policy: Policy, where: str) -> None:
    """A binding on stored or new objects names their type; `stored_unless` and `changes` need `stored`."""
    if (policy.stored or policy.rule or policy.new_attributes) and not policy.object_type:
        raise HandlerDiscoveryError(f"{where}: a policy on stored or new objects needs an object_type.")
    if (policy.stored_unless or policy.changes) and not policy.stored:
        raise HandlerDiscoveryError(f"{where}: policy stored_unless and changes need a stored field.")


def _check_policy_fields(policy: Policy, inputs: tuple[str, ...], where: str) -> None:
    """Every field a policy binding names is an input field of the operation."""
    for f, target in (*policy.fields.items(), *policy.changes.items(), *policy.new_attributes.items()):
        if target not in inputs:
            raise HandlerDiscoveryError(f"{where}: policy field {f!r} maps to unknown field {target!r}.")
    for name, value in (("stored", policy.stored), ("stored_unless", policy.stored_unless)):
        if value is not None and value not in inputs:
            raise HandlerDiscoveryError(f"{where}: policy {name} {value!r} is not a field.")


def _check_security(op: "type[Operation[Any]]", where: str) -> None:
    """Every command says whether it is audited; only commands are; `too_many` is a known reason."""
    policy, rest = op.policy, op.rest
    if op.kind == "command" and (policy.audit is None) == (policy.unaudited is None):
        raise HandlerDiscoveryError(f"{where}: a command declares exactly one of policy audit= and unaudited=.")
    if op.kind != "command" and (policy.audit is not None or policy.writes_policy):
        raise HandlerDiscoveryError(f"{where}: a query is never audited and writes no policy.")
    if policy.audit is not None:
        inputs = set(op.model_fields) | set(getattr(op.result_type, "model_fields", ()))
        if policy.audit.ids and not set(policy.audit.ids) & inputs:
            raise HandlerDiscoveryError(
                f"{where}: no audit id {list(policy.audit.ids)} is a field of the input or result."
            )
    if rest is not None and rest.too_many is not None and rest.too_many not in TOO_MANY:
        raise HandlerDiscoveryError(f"{where}: too_many {rest.too_many!r} is not one of {TOO_MANY}.")


def _check_listing_b(rest: Rest | None, where: str) -> None:
    if rest is not None and not set(rest.listing_b) <= set(rest.paths):
        raise HandlerDiscoveryError(f"{where}: listing_b paths {list(rest.listing_b)} are not paths of the route.")


class OperationSpec(NamedTuple, Generic[R_co]):
    """Everything an interface needs to know about one operation, derived once."""

    cls: type[Operation[R_co]]
    name: str
    kind: str
    summary: str
    description: str
    result_type: type[R_co]
    input_fields: tuple[str, ...]
    required_fields: tuple[str, ...]
    rest: Rest | None
    path_fields: tuple[str, ...]
    query_fields: tuple[str, ...]
    body_fields: tuple[str, ...]
    cli: Cli | None
    mcp_names: tuple[str, ...]
    policy: Policy
    route: str | None
    """Tier-1 route template this operation is authorized as (the policy's, else the REST path)."""
    method: str
    """The HTTP method tier 1 decides on (the policy's, else the REST method, else GET for a query, POST)."""

    @classmethod
    def compile(cls, op: "type[Operation[R_co]]") -> "OperationSpec[R_co]":
        """Check the class's declarations and derive its spec, in this order: docstring and result type,
        output fields, REST binding, CLI, MCP and policy bindings; the first bad one raises, naming the class."""
        name = sdk_name(op.__name__)
        where = f"{op.__module__}.{op.__qualname__}"
        doc = _described(op, where)
        inputs = _input_fields(op, where)
        path_fields, query_fields, body_fields = _rest_fields(op.rest, inputs, where)
        _check_cli(op.cli, inputs, where)
        mcp_names = _mcp_names(op, name, inputs, where)
        method = op.policy.method or (op.rest.method if op.rest else "GET" if op.kind == "query" else "POST")
        _check_policy(op.policy, method, inputs, where)
        _check_listing_b(op.rest, where)
        _check_security(op, where)
        lines = doc.splitlines()
        return cls(
            cls=op,
            name=name,
            kind=op.kind,
            summary=lines[0].strip(),
            description="\n".join(lines[1:]).strip(),
            result_type=op.result_type,
            input_fields=inputs,
            required_fields=tuple(f for f in inputs if op.model_fields[f].is_required()),
            rest=op.rest,
            path_fields=path_fields,
            query_fields=query_fields,
            body_fields=body_fields,
            cli=op.cli,
            mcp_names=mcp_names,
            policy=op.policy,
            route=op.policy.route or (op.rest.path if op.rest else None),
            method=method,
        )

    # -- building -------------------------------------------------------
    def build(self, data: Mapping[str, Any]) -> "Operation[R_co]":
        """Validate input into the operation; a bad field is a ValidationError naming it."""
        if type(data) is not dict:  # a dict is validated as given: validation copies what it keeps, changes nothing
            data = dict(data)
        try:  # the validator itself: `model_validate`'s argument handling is a tenth of a subject check's input
            return _class_attribute(self.cls, "__pydantic_validator__").validate_python(data)  # type: ignore[no-any-return]
        except pydantic.ValidationError as exc:
            raise validation_error(exc, self.name) from None

    # -- authorization --------------------------------------------------
    @property
    def category(self) -> str:
        if self.policy.category:
            return self.policy.category
        return self.cls.__module__.rsplit(".", 1)[-1]

    def concrete_route(self, op: Operation) -> str | None:
        """The route with path parameters filled from the operation (tier 1 matches this)."""
        route = self.route
        if route is None:
            return None
        return _PATH_PARAM.sub(lambda m: str(getattr(op, m.group(1), m.group(0))), route)

    def stored_id(self, op: Operation) -> str | None:
        """The id of the one stored object this call acts on (`Policy.stored`), or None when it names none."""
        policy = self.policy
        if policy.stored is None or (policy.stored_unless and getattr(op, policy.stored_unless) is not None):
            return None
        value = getattr(op, policy.stored)
        return None if value is None else str(value)

    def object_attributes(self, op: Operation) -> dict[str, Any]:
        """Tier-2 attributes known from the input alone (before any lookup)."""
        return {attr: getattr(op, fld) for attr, fld in self.policy.fields.items() if getattr(op, fld) is not None}

    def field_docs(self) -> dict[str, str]:
        """Field name -> help text (the docstring under the field)."""
        _documented(self.cls)
        return {f: self.cls.model_fields[f].description or "" for f in self.input_fields}

    def input_schema(self) -> dict[str, Any]:
        """JSON schema of the input fields (snake_case), with field docs as descriptions."""
        _documented(self.cls)
        schema = self.cls.model_json_schema(by_alias=False)
        props = schema.get("properties", {})
        for out in self.cls.output_fields:
            props.pop(out, None)
        schema["required"] = [f for f in schema.get("required", []) if f in props]
        return schema


_class_attribute = type.__getattribute__
"""A class's attribute read without pydantic's metaclass `__getattr__` hook, which makes every read on a model class
a Python-level call."""


def validation_error(exc: pydantic.ValidationError, where: str) -> ValidationError:
    """Turn pydantic's error into ours: first problem in the message, all in details; an identifier checked by
    its pattern in Rust is described as the ones checked in Python are (`pattern_problem`)."""
    errors = [_as_identifier(e) for e in exc.errors(include_url=False)]
    first = errors[0]
    fld = ".".join(str(p) for p in first["loc"]) or str((first.get("ctx") or {}).get("field", "input"))
    if first["type"] == "invalid_pagination_token":
        return InvalidPaginationToken(details={"field": fld, "expected": "the NextToken of the previous page"})
    value = first.get("input")
    if first["type"] == "extra_forbidden" or (not isinstance(value, str | int | float | bool) and value is not None):
        value = None  # an unknown field's value is never echoed (it may be a misspelt password)
    message = f"Invalid value for {fld!r} in {where}: {first['msg']}."
    if first["type"] == "missing":
        message = f"{fld!r} is required for {where}."
    elif first["type"] == "extra_forbidden":
        message = f"Unknown field {fld!r} for {where}."
    return ValidationError(
        message,
        details={
            "field": fld,
            "value": value,
            "expected": first["msg"],
            "errors": [
                {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"], "type": e["type"]} for e in errors
            ],
        },
    )


def _as_identifier(error: Any) -> Any:
    problem = pattern_problem(error)
    return error if problem is None else {**error, "type": "identifier", "msg": problem}


@functools.cache
def _documented(cls: type[Operation]) -> bool:
    """Attach field docstrings to an operation class once, for its help and JSON schema.

    Only help and schemas show them, so a plain call (`build`) never pays for reading the module's
    source. Descriptions are baked into the core schema, so a class a call has built already is rebuilt.
    """
    from .._lazy import apply_field_docs

    apply_field_docs(cls)
    if cls.__pydantic_complete__:
        cls.model_rebuild(force=True)
    return True


class Catalog(MutableMapping[str, OperationSpec]):
    """SDK name -> spec. Operation modules are imported on demand.

    Looking one operation up imports only its module (found through the index, `pluginsdk/_lazy.py`); listing,
    counting or iterating imports every operation module first, so a listing is always complete. A CLI
    call of one command thereby builds only its own module's classes, not the ~160 of the whole catalog.
    A stale index costs only speed: a name it does not know loads everything.
    """

    def __init__(self) -> None:
        self._specs: dict[str, OperationSpec] = {}
        self._complete = False

    def register(self, spec: OperationSpec) -> None:
        known = self._specs.get(spec.name)
        if known is not None and known.cls.__qualname__ != spec.cls.__qualname__:
            raise HandlerDiscoveryError(f"Operation name {spec.name!r} registered twice ({spec.cls.__qualname__}).")
        self._specs[spec.name] = spec

    def load_all(self) -> None:
        """Import every operation module (each registers its operations)."""
        if self._complete:
            return
        import importlib
        import pkgutil

        package = importlib.import_module(__package__ or "pluginsdk.operations")
        for module in pkgutil.iter_modules(package.__path__):
            if not module.name.startswith("_"):
                importlib.import_module(f"{package.__name__}.{module.name}")
        self._complete = True

    def _find(self, name: str) -> OperationSpec | None:
        spec = self._specs.get(name)
        if spec is None and not self._complete:
            import importlib

            from .._lazy import operation_module

            module = operation_module(name)
            if module is not None:
                importlib.import_module(module)
                spec = self._specs.get(name)
            if spec is None:
                self.load_all()
                spec = self._specs.get(name)
        return spec

    def __getitem__(self, name: str) -> OperationSpec:
        spec = self._find(name)
        if spec is None:
            raise KeyError(name)
        return spec

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._find(name) is not None

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return iter(self._specs)

    def __len__(self) -> int:
        self.load_all()
        return len(self._specs)

    def __setitem__(self, name: str, spec: OperationSpec) -> None:
        self._specs[name] = spec

    def __delitem__(self, name: str) -> None:
        del self._specs[name]


CATALOG = Catalog()
"""SDK name -> spec, for every registered operation."""


R = typing.TypeVar("R")


@overload
def get_spec(name_or_op: str) -> OperationSpec: ...
@overload
def get_spec(name_or_op: "Operation[R] | type[Operation[R]]") -> "OperationSpec[R]": ...
def get_spec(name_or_op: str | Operation | type[Operation]) -> OperationSpec:
    """The spec of an operation by SDK name, class or instance (typed by the class's result type)."""
    if isinstance(name_or_op, str):
        try:
            return CATALOG[name_or_op]
        except KeyError:
            raise HandlerDiscoveryError(
                f"No operation named {name_or_op!r}; known: {', '.join(sorted(CATALOG))}."
            ) from None
    cls = name_or_op if isinstance(name_or_op, type) else type(name_or_op)
    return cls.spec
