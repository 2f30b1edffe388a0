"""MCP resources: `templates://`, `requests://`, `machines://`, `providers://`, read through the SDK.

`<scheme>://` is the collection: the first page of its list operation (default limit, with `total_count`,
so a reader knows whether the matching `list_*` tool has more). `<scheme>://<id>` is one entity through
its get operation. Both answer the result model's JSON. A failure is a JSON-RPC error whose `data` holds
the same `error` object a failing tool answers with (`tool` replaced by `uri`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import mcp_types as types
from mcp import MCPError

from ..errors import NotFoundError, SDKError, ValidationError
from ..operations import CATALOG
from .tools import to_json

if TYPE_CHECKING:
    from ..sdk import PluginSDK
    from ..waiting import Executor

__all__ = ["COLLECTIONS", "Collection", "ResourceSet"]

MIME = "application/json"


@dataclass(frozen=True, slots=True)
class Collection:
    """One resource scheme and the operations that read it."""

    scheme: str
    list_op: str
    get_op: str | None = None
    id_field: str | None = None

    @property
    def uri(self) -> str:
        return f"{self.scheme}://"


COLLECTIONS = (
    Collection("templates", "list_templates", "get_template", "template_id"),
    Collection("requests", "list_requests", "get_request", "request_id"),
    Collection("machines", "list_machines", "get_machine", "machine_id"),
    Collection("providers", "list_providers"),
)


class ResourceSet:
    """The resources, read on one started SDK or on the executor each read names."""

    def __init__(self, sdk: PluginSDK | None) -> None:
        self.sdk = sdk
        self.by_scheme = {c.scheme: c for c in COLLECTIONS}

    def resources(self) -> list[types.Resource]:
        return [
            types.Resource(
                name=c.scheme,
                uri=c.uri,
                description=_describe_list(c.list_op),
                mime_type=MIME,
            )
            for c in COLLECTIONS
        ]

    def templates(self) -> list[types.ResourceTemplate]:
        return [
            types.ResourceTemplate(
                name=c.scheme.removesuffix("s"),
                uri_template=f"{c.uri}{{{c.id_field}}}",
                description=CATALOG[c.get_op].summary,
                mime_type=MIME,
            )
            for c in COLLECTIONS
            if c.get_op and c.id_field
        ]

    async def read(self, uri: str, executor: Executor | None = None) -> types.ReadResourceResult:
        scheme, sep, rest = uri.partition("://")
        collection = self.by_scheme.get(scheme) if sep else None
        ident = unquote(rest.strip("/"))
        if collection is None or (ident and not collection.get_op):
            known = ", ".join(c.uri for c in COLLECTIONS)
            raise _error(NotFoundError("resource", uri, f"Unknown resource {uri!r}; resources: {known}."), uri)
        runner: Any = executor if executor is not None else self.sdk
        try:
            if ident and collection.get_op and collection.id_field:
                result = await runner.execute(CATALOG[collection.get_op].build({collection.id_field: ident}))
            else:
                result = await runner.execute(CATALOG[collection.list_op].build({}))
        except SDKError as err:
            raise _error(err, uri) from None
        text = json.dumps(to_json(result), default=str)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=MIME, text=text)])


def _describe_list(op: str) -> str:
    spec = CATALOG[op]
    paged = " First page only; the `{op}` tool pages further." if "offset" in spec.input_fields else ""
    return spec.summary + paged.format(op=op)


def _error(err: SDKError, uri: str) -> MCPError:
    """Not found and bad input are the reader's mistake (invalid params); anything else is internal."""
    code = types.INVALID_PARAMS if isinstance(err, NotFoundError | ValidationError) else types.INTERNAL_ERROR
    body: dict[str, Any] = {
        "type": type(err).__name__,
        "message": err.message,
        "uri": uri,
        "error_code": err.code,
        "details": err.details,
    }
    return MCPError(code, err.message, {"success": False, "error": body})
