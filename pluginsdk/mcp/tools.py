"""MCP tools derived from the operation catalog: one tool per MCP name of every operation in the profile.

Nothing here is written per operation. A tool's `inputSchema` is its operation's JSON schema (snake_case
fields, field docstrings as descriptions) and its `outputSchema` the result model's, both compacted
(`schemas.compact`). A call checks the arguments against the published input schema (`arguments.py`), builds
the operation and runs it on the SDK, as `PluginSDK.call` does (the path the CLI takes), and answers with the
result model's JSON as structured content and as text. A failure answers `isError` with the spec's `error`
object as text content only: structured content must match the output schema, and an error does not.

A `create_request` that waits (`wait: true`) waits through `pluginsdk.waiting`, as the CLI's progress line
does, and hands every reading to the call's `progress` report (the server sends `notifications/progress`).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
import pydantic
from pydantic.alias_generators import to_camel, to_snake

from ..errors import (
    HandlerDiscoveryError,
    MethodExecutionError,
    SDKError,
    ValidationError,
    clean_details,
    is_secret_field,
)
from ..operations import CATALOG, OperationSpec
from ..waiting import Executor, Report, reports_progress, request_and_wait
from .arguments import ArgumentCheck
from .profiles import ALL, profile_of, selects
from .schemas import compact

if TYPE_CHECKING:
    from ..sdk import PluginSDK

__all__ = ["ToolSet", "error_object", "tool_specs"]

log = logging.getLogger(__name__)


def tool_specs(profile: tuple[str, ...] = (ALL,)) -> dict[str, OperationSpec]:
    """Tool name -> operation, for every MCP-enabled operation in `profile` (its own name and its extra names)."""
    return {tool: spec for spec in CATALOG.values() if selects(profile, spec) for tool in spec.mcp_names}


_ALIAS_NOTE = re.compile(r"\s*\(alias(?:es)?: [^)]*\)")
"""A field doc's "(aliases: count, machine_count)": other interfaces take those names, a tool only its schema's."""


def _description(tool: str, spec: OperationSpec) -> str:
    text = spec.summary + (f"\n\n{inspect.cleandoc(spec.description)}" if spec.description else "")
    if tool != spec.mcp_names[0]:
        text += f"\n\nSame operation as the `{spec.mcp_names[0]}` tool."
    return text


def _output_schema(spec: OperationSpec) -> dict[str, Any] | None:
    """The result model's JSON schema as serialised (snake_case), compacted; None for a non-model result."""
    result = spec.result_type
    if isinstance(result, type) and issubclass(result, pydantic.BaseModel):
        return compact(result.model_json_schema(mode="serialization", by_alias=False), output=True)
    return None


def renames(tool: str, spec: OperationSpec) -> Mapping[str, str]:
    """Field -> the name this tool shows for it: the spec's names (`request_id`; `count` on an extra tool)."""
    mcp = spec.cls.mcp
    return {**mcp.names, **mcp.extra_names} if tool != spec.mcp_names[0] else mcp.names


_CAMEL = re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b")
"""A camelCase word (`groupId`): the wire name of a field the shared field docs use for REST bodies."""


def _property_names(node: Any) -> set[str]:
    """Every property name declared anywhere in a schema (nested objects and `$defs` included)."""
    if isinstance(node, list):
        return set().union(*(_property_names(v) for v in node))
    if not isinstance(node, dict):
        return set()
    names = set(node["properties"]) if isinstance(node.get("properties"), dict) else set()
    return names.union(*(_property_names(v) for v in node.values()))


def _schema_words(text: str, names: set[str]) -> str:
    """`text` naming fields as the schema does: a camelCase word whose snake_case form is one of `names`."""
    return _CAMEL.sub(lambda m: snake if (snake := to_snake(m.group())) in names else m.group(), text)


def _speak_schema(node: Any, names: set[str]) -> None:
    """Every description under `node` rewritten by `_schema_words`, in place."""
    if isinstance(node, list):
        for v in node:
            _speak_schema(v, names)
    elif isinstance(node, dict):
        for k, v in node.items():
            if k == "description" and isinstance(v, str):
                node[k] = _schema_words(v, names)
            else:
                _speak_schema(v, names)


def _one_or_many(prop: dict[str, Any]) -> dict[str, Any]:
    """A list property as one item or the list (a field shown under a singular name: `request_id`)."""
    if prop.get("type") != "array" or "items" not in prop:
        return prop
    described = {"description": prop.pop("description")} if "description" in prop else {}
    return {"anyOf": [prop["items"], prop], **described}


def _input_schema(tool: str, spec: OperationSpec) -> dict[str, Any]:
    """The operation's input schema, compacted, under the names the tool shows (`renames`); descriptions name
    fields as this schema does (the shared field docs write REST's camelCase)."""
    schema = compact(spec.input_schema(), output=False)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop.get("description"), str):
            prop["description"] = _ALIAS_NOTE.sub("", prop["description"])
    shown = renames(tool, spec)
    if shown:
        props = schema.get("properties", {})
        singular = spec.cls.mcp.names
        schema["properties"] = {shown.get(k, k): _one_or_many(v) if k in singular else v for k, v in props.items()}
        if "required" in schema:
            schema["required"] = [shown.get(k, k) for k in schema["required"]]
    _speak_schema(schema, _property_names(schema))
    return schema


def describe(tool: str, spec: OperationSpec) -> types.Tool:
    """The MCP tool of one operation under one of its names (no `title`: the description's first line is it)."""
    schema = _input_schema(tool, spec)
    return types.Tool(
        name=tool,
        description=_schema_words(_description(tool, spec), _property_names(schema)),
        input_schema=schema,
        output_schema=_output_schema(spec),
        annotations=types.ToolAnnotations(read_only_hint=spec.kind == "query"),
    )


def _is_secret(name: str, secrets: frozenset[str]) -> bool:
    """An operation's `secret_fields`, or a name that says secret (`pluginsdk.errors.is_secret_field`)."""
    return name in secrets or is_secret_field(name) or any(w in name.lower() for w in ("password", "token"))


def _secrets_of(spec: OperationSpec | None) -> frozenset[str]:
    names: tuple[str, ...] = getattr(spec.cls, "secret_fields", ()) if spec else ()
    return frozenset((*names, *(to_camel(n) for n in names)))


def mask_arguments(arguments: Mapping[str, Any], spec: OperationSpec | None) -> dict[str, Any]:
    """The arguments as given, with secrets replaced by `***` and long strings cut (error objects echo them)."""
    secrets = _secrets_of(spec)
    masked = {k: ("***" if _is_secret(k, secrets) and v else v) for k, v in arguments.items()}
    cleaned: dict[str, Any] = clean_details({"arguments": masked})["arguments"]  # bounded as error details are
    return cleaned


def error_object(
    err: SDKError, *, tool: str, arguments: Mapping[str, Any], spec: OperationSpec | None = None
) -> dict[str, Any]:
    """The spec's MCP error object (`type`, `message`, `tool`, `arguments`) plus the envelope's code and details."""
    details = dict(err.details)
    if isinstance(details.get("field"), str) and _is_secret(details["field"], _secrets_of(spec)):
        details["value"] = "***"
    return {
        "type": type(err).__name__,
        "message": err.message,
        "tool": tool,
        "arguments": mask_arguments(arguments, spec),
        "error_code": err.code,
        "details": details,
    }


def to_json(result: Any) -> dict[str, Any]:
    """A result as the JSON object a tool answers with (snake_case keys, ISO 8601 datetimes)."""
    if isinstance(result, pydantic.BaseModel):
        return result.model_dump(mode="json")
    if isinstance(result, Mapping):
        return dict(result)
    return {"result": result}


def _text(data: Any) -> list[types.ContentBlock]:
    return [types.TextContent(text=json.dumps(data, default=str))]


class ToolSet:
    """The profile's tools, run on one started SDK or on the executor each call names; the list is built once."""

    def __init__(self, sdk: PluginSDK | None, profile: tuple[str, ...] = (ALL,)) -> None:
        self.sdk = sdk
        self.profile = profile
        self.specs = tool_specs(profile)
        self.tools = [describe(name, spec) for name, spec in self.specs.items()]
        self.checks = {tool.name: ArgumentCheck(tool.name, tool.input_schema) for tool in self.tools}

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        progress: Report | None = None,
        executor: Executor | None = None,
    ) -> types.CallToolResult:
        """Run the tool's operation on `executor` (else the SDK); every failure becomes an `isError` result
        carrying the error object.

        With `progress`, a waiting `create_request` polls its status and reports every reading to it. An
        executor acting for a caller (`pluginsdk.mcp.caller.Caller`) refuses a caller whom the route behind
        the tool denies before it answers about invalid arguments, as the REST server does.
        """
        runner: Any = executor if executor is not None else self.sdk
        args = dict(arguments or {})
        spec = self.specs.get(tool)
        log.debug("tool %s %s", tool, mask_arguments(args, spec))
        checked = False  # past the schema check, errors speak the operation's names: renamed to the tool's
        try:
            if spec is None:
                raise _unknown_tool(tool, self.profile)
            try:
                self.checks[tool].check(args)
                checked = True
                op = _build(tool, spec, args)
            except ValidationError:
                await _deny_first(runner, spec, renames(tool, spec), args)
                raise
            if progress is not None and reports_progress(op):
                result: Any = await request_and_wait(runner, op, progress)
            else:
                result = await runner.execute(op)
        except SDKError as err:
            log.info("tool %s failed: %s (%s)", tool, err.message, err.code)
            return self._failure(_as_sent(err, tool, spec) if checked else err, tool, args, spec)
        except Exception as exc:  # never leak internals: logged to stderr, one generic error object
            log.exception("MCP tool %s failed unexpectedly", tool)
            internal = MethodExecutionError(f"{tool} failed unexpectedly: {type(exc).__name__}.")
            return self._failure(internal, tool, args, spec)
        data = to_json(result)
        return types.CallToolResult(content=_text(data), structured_content=data)

    @staticmethod
    def _failure(err: SDKError, tool: str, args: Mapping[str, Any], spec: OperationSpec | None) -> types.CallToolResult:
        """The error object as text only: MCP puts a tool error in `content`, and structured content would
        have to match the tool's output schema (the TypeScript SDK client checks it even on errors)."""
        body = {"success": False, "error": error_object(err, tool=tool, arguments=args, spec=spec)}
        return types.CallToolResult(content=_text(body), is_error=True)


async def _deny_first(runner: Any, spec: OperationSpec, shown: Mapping[str, str], args: Mapping[str, Any]) -> None:
    """Tier 1 for a caller whose arguments are invalid (PermissionDeniedError), where the runner checks one."""
    deny = getattr(runner, "deny_first", None)
    if deny is not None:
        await deny(spec, {field: args.get(shown.get(field, field)) for field in spec.input_fields})


def _unknown_tool(tool: str, profile: tuple[str, ...]) -> HandlerDiscoveryError:
    """No such tool here: says which profile has it when the catalog does."""
    spec = tool_specs().get(tool)
    if spec is None:
        return HandlerDiscoveryError(f"No tool named {tool!r}; list the tools with tools/list.")
    return HandlerDiscoveryError(
        f"Tool {tool!r} is not in this server's profile ({','.join(profile)}); it is in profile "
        f"{profile_of(spec)!r}: start the server with --profile {profile_of(spec)} (or all).",
        details={"tool": tool, "profile": profile_of(spec)},
    )


def _build(tool: str, spec: OperationSpec, args: Mapping[str, Any]) -> Any:
    """The operation from arguments that passed the schema: the tool's shown names back to the fields'."""
    canonical = {v: k for k, v in renames(tool, spec).items()}
    return spec.build({canonical.get(k, k): v for k, v in args.items()})


def _as_sent(err: SDKError, tool: str, spec: OperationSpec | None) -> SDKError:
    """`err` naming fields as this tool shows them (`count`, not `requested_count`) and the tool, not the operation.

    The operation model and the engine speak the canonical names; a tool differs where it shows a field
    under another name (`renames`) or is an extra name of its operation. The message is reworded where it
    quotes a renamed field or the operation's name.
    """
    shown = renames(tool, spec) if spec is not None else {}
    if spec is None or (tool == spec.name and not shown):
        return err

    def name(path: str) -> str:
        head, dot, rest = path.partition(".")
        return shown.get(head, head) + dot + rest

    details = dict(err.details)
    if isinstance(details.get("field"), str):
        details["field"] = name(details["field"])
    if isinstance(details.get("errors"), list):
        details["errors"] = [
            {**e, "field": name(e["field"])} if isinstance(e, dict) and isinstance(e.get("field"), str) else e
            for e in details["errors"]
        ]
    message = err.message
    for canonical, alias in shown.items():
        message = message.replace(repr(canonical), repr(alias))
    message = re.sub(rf"\b{re.escape(spec.name)}\b", tool, message)
    err.message, err.details, err.args = (
        message,
        clean_details(details),
        (message,),
    )  # this call's own error: reworded in place
    return err
