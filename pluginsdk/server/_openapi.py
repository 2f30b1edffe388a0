"""The OpenAPI document, built by FastAPI from the same catalog the server routes (/docs renders it: `_docs.py`).

Request parameters and bodies come from each operation's model (with field docs) under the names the route's
spec writes (camelCase on auth-service routes, `_wire`), responses from its result model and the error
envelope; every status the server can answer is listed. Every operation and tag is described (`_describe`).
Links from each create's result to the operations on the object it created (`template_id` -> get, update and
delete of that template, `roleName` -> the body of `PUT /roles`) let schemathesis walk create -> read ->
update -> delete.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic.alias_generators import to_camel, to_snake

from ..operations import CATALOG, OperationSpec

__all__ = ["ERROR_SCHEMA", "build_document", "listing_b_created", "operation_id", "route_key"]

_REF = "#/components/schemas/{model}"
_PREFIX = "#/components/schemas/"

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["success", "error", "error_code", "details"],
    "properties": {
        "success": {"type": "boolean", "const": False},
        "error": {"type": "string"},
        "error_code": {"type": "string"},
        "details": {"type": "object"},
        "message": {"type": "string"},
    },
}

_ERRORS = (
    ("400", "Invalid input"),
    ("401", "Missing or invalid credentials"),
    ("403", "Not authorized"),
    ("404", "Not found"),
    ("409", "Conflict"),
    ("413", "Body larger than the limit"),
    ("414", "Request target too long"),
    ("431", "Request headers too large"),
    ("500", "Internal error"),
    ("502", "Provider error"),
)

_TOO_MANY_WHY = {
    "throttled": "Too many failed attempts, or password hashing saturated: try again after Retry-After",
    "quota": "A quota is reached (machines at once, machines per user per window): try again after Retry-After",
}
"""The 429 response's description, by the operation's `Rest.too_many` (docs/auth.md "Sign-in limits",
docs/providers.md "Quotas")."""
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "integer"}}}

SECURITY: list[dict[str, list[str]]] = [{"apiKey": []}, {"bearer": []}]
"""Either scheme: an API key, or a bearer JWT from /auth/login. Public routes say `security: []`."""
SECURITY_SCHEMES = {
    "apiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": "An API key as the whole header value, without the Bearer word: `Authorization: psdk_...`",
    },
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "A token from POST /auth/login (managed user pool): `Authorization: Bearer <jwt>`",
    },
}

_LISTING_B_SCHEMA: dict[str, Any] = {
    "title": "RequestSubmittedListingB",
    "type": "object",
    "required": ["requestId", "message"],
    "properties": {
        "requestId": {"type": "string", "description": "The id of the created request."},
        "message": {"type": "string"},
        "status": {"type": "string", "description": "submitted (or the state reached with wait)."},
    },
}


def listing_b_created(result: Any) -> dict[str, Any]:
    """The answer of POST /api/v1/machines/request as listing B writes it: `requestId`, `message`."""
    status = str(getattr(result, "status", "submitted"))
    request_id = str(result.request_id or "")  # none for a dry run
    return {"requestId": request_id, "message": f"Request {request_id} {status}.", "status": status}


def route_key(path: str) -> list[tuple[int, str]]:
    """Literal segments before parameters at each position (`/requests/status` before `/requests/{id}`)."""
    return [(1 if seg.startswith("{") else 0, seg) for seg in path.strip("/").split("/")]


def operation_id(spec: OperationSpec, path: str) -> str:
    """The SDK method's name; an alternative path adds `_via_` and its first literal segment not in the main
    path (`create_request_via_request`, `list_managed_users_via_cognito`): stable, never a counter."""
    assert spec.rest is not None
    if path == spec.rest.path:
        return spec.name
    main = set(spec.rest.path.strip("/").split("/"))
    extra = [seg for seg in path.strip("/").split("/") if seg not in main and not seg.startswith("{")]
    slug = "_".join(to_snake(seg) for seg in extra) or "alt"
    return f"{spec.name}_via_{slug}"


COMPONENT_NAMES = {"ManagedUser": "User"}
"""Models whose component is named for what the API calls them: a managed-user record is the `User` that every
`user_id` names (clients and schemathesis find the object an input refers to by this name)."""


class _Schemas:
    """Collects JSON schemas of models into OpenAPI components (pydantic `$defs` moved to components).

    Response components are named for their model (camelCase routes' and snake_case routes' models are
    distinct, so no name has two shapes); request components get `Input` (once: `CriterionInput` stays)."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = {"ErrorEnvelope": ERROR_SCHEMA}

    def output(self, model: type[Any], camel: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """The response schema (a $ref) and the model's own schema."""
        schema: dict[str, Any] = model.model_json_schema(by_alias=camel, mode="serialization", ref_template=_REF)
        return self._hoist(schema, "", COMPONENT_NAMES.get(model.__name__, model.__name__)), schema

    def input(self, spec: OperationSpec) -> dict[str, Any]:
        """The operation's input schema under the names its route documents (`_wire`)."""
        assert spec.rest is not None
        spec.field_docs()
        schema: dict[str, Any] = spec.cls.model_json_schema(by_alias=spec.rest.camel, mode="validation")
        schema.pop("title", None)
        return self._hoist(_input_refs(schema), "Input", None)

    def _hoist(self, schema: dict[str, Any], suffix: str, name: str | None) -> dict[str, Any]:
        """Each component titled with its own (unique) key: generators name models by title."""
        output = not suffix  # `COMPONENT_NAMES` names response components
        for def_name, definition in schema.pop("$defs", {}).items():
            key = COMPONENT_NAMES.get(def_name, def_name) if output else _input_name(def_name)
            self._add(key, _renamed(definition) if output else definition)
        if name is None:
            return schema
        self._add(name, _renamed(schema))
        return {"$ref": _REF.format(model=name)}

    def _add(self, name: str, schema: dict[str, Any]) -> None:
        component = {**schema, "title": name}
        assert self.components.setdefault(name, component) == component, f"two shapes named {name}"


def _input_name(model: str) -> str:
    """A request component's name: the model's with `Input` (`AccessQuestionDataInput`), once."""
    return model if model.endswith("Input") else model + "Input"


def _input_refs(node: Any) -> Any:
    """`node` (an input schema) with its `#/$defs/...` references pointing at the request components."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return {**node, "$ref": _REF.format(model=_input_name(ref[len("#/$defs/") :]))}
        return {key: _input_refs(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_input_refs(value) for value in node]
    return node


def _wire(spec: OperationSpec, field: str) -> str:
    """The name the route documents for an input field: the camelCase alias on an auth-service route (the
    spec's `roleName`, `pageSize`), else the field's own. The server takes either name on every route."""
    assert spec.rest is not None
    if not spec.rest.camel:
        return field
    info = spec.cls.model_fields.get(field)
    return info.alias if info is not None and info.alias else to_camel(field)


CAMEL_NOTE = (
    "Body and query names are camelCase, as the auth-service spec writes them; "
    "the snake_case form of each name is accepted too."
)
"""Appended to the description of every operation on an auth-service (camelCase) route with input."""


def _renamed(node: Any) -> Any:
    """`node` with `COMPONENT_NAMES` applied to its `$ref`s."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_PREFIX) and ref[len(_PREFIX) :] in COMPONENT_NAMES:
            return {**node, "$ref": _PREFIX + COMPONENT_NAMES[ref[len(_PREFIX) :]]}
        return {key: _renamed(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed(value) for value in node]
    return node


def _creates(spec: OperationSpec) -> bool:
    """A POST that creates an object (`create_*`): where a create -> read -> update -> delete walk starts. Other
    POSTs (sync, complete, decisions) act on objects that exist already, so they lead no walk."""
    assert spec.rest is not None
    return spec.rest.method == "POST" and spec.name.startswith("create_")


def _identity(spec: OperationSpec) -> dict[str, str]:
    """Input field -> the attribute of the object it names: the tier-2 binding (`role_id` names `roleName`),
    else each path parameter under its camelCase name."""
    if spec.policy.fields:
        return {field: attribute for attribute, field in spec.policy.fields.items()}
    return {name: to_camel(name) for name in spec.path_fields}


def _group(spec: OperationSpec) -> str:
    return spec.policy.object_type or spec.category


def _link(spec: OperationSpec, target: OperationSpec, result_props: dict[str, Any]) -> dict[str, Any] | None:
    """The link giving `target` every identifying input from the created object, or None if one is missing.

    None too for a target naming the object in its query string (`POST /templates/validate?template_id=`): it
    is a collection route, not the object's resource (clients, and schemathesis, tie an object to its path:
    after the object's DELETE it would take that route's 404 for a created object gone missing)."""
    assert target.rest is not None
    params: dict[str, str] = {}
    body: dict[str, str] = {}
    for field, attribute in _identity(target).items():
        prop = attribute if attribute in result_props else to_snake(attribute)
        if prop not in result_props:
            return None
        value = f"$response.body#/{prop}"
        if field in target.path_fields:
            params[f"path.{field}"] = value
        elif field in target.body_fields and target.rest.body_field is None:
            body[_wire(target, field)] = value
        else:
            return None
    if not (params or body):
        return None
    link: dict[str, Any] = {"operationId": target.name}
    if params:
        link["parameters"] = params
    if body:  # the identifying fields of the body; the rest of it is the caller's (schemathesis merges)
        link["requestBody"] = body
    return link


def _links(spec: OperationSpec, result_props: dict[str, Any]) -> dict[str, Any]:
    """Links from a create's result to the operations on the object it created (its group: the tier-2 object
    type, else the category) and to the creates that refer to it (`templateId` of a machine request)."""
    if not _creates(spec):
        return {}
    group = _group(spec)
    links: dict[str, Any] = {}
    for target in CATALOG.values():
        refers = _creates(target) and f"{group}Id" in _identity(target).values()
        if target is spec or target.rest is None or not (_group(target) == group or refers):
            continue
        link = _link(spec, target, result_props)
        if link is not None:
            links[target.name] = link
    return links


def _parameters(spec: OperationSpec, props: dict[str, Any]) -> list[dict[str, Any]]:
    """Path parameters (the field's own rules), then query parameters (with their REST defaults)."""
    params: list[dict[str, Any]] = [
        {
            "name": n,
            "in": "path",
            "required": True,
            "schema": _path_schema(props.get(_wire(spec, n), {})),
            "description": props.get(_wire(spec, n), {}).get("description", ""),
        }
        for n in spec.path_fields
    ]
    assert spec.rest is not None
    defaults = spec.rest.defaults
    for n in spec.query_fields:
        name = _wire(spec, n)
        prop = dict(props.get(name, {}))
        description = prop.pop("description", "")
        if n in defaults:
            prop["default"] = defaults[n]
        params.append({"name": name, "in": "query", "required": False, "schema": prop, "description": description})
    return params


def _request_body(spec: OperationSpec, props: dict[str, Any], required: set[str]) -> dict[str, Any]:
    assert spec.rest is not None
    if spec.rest.body_field is not None:
        body_schema = props.get(_wire(spec, spec.rest.body_field), {"type": "object"})
    else:
        names = {n: _wire(spec, n) for n in spec.body_fields}
        body_props = {w: _with_default(props[w], n, spec.rest.defaults) for n, w in names.items() if w in props}
        for n in spec.cls.ignored_fields:
            body_props[n] = {"description": "Accepted and ignored (sent by the VAMS web client)."}
        if spec.rest.camel:  # the VAMS constraint form repeats the path's id in the body
            for n in spec.path_fields:
                repeated = {k: v for k, v in props.get(_wire(spec, n), {}).items() if k not in ("title", "default")}
                body_props[_wire(spec, n)] = {**repeated, "description": "The path's value again (optional)."}
        body_schema = {
            "type": "object",
            "properties": body_props,
            "required": [names[n] for n in spec.body_fields if names[n] in required],
            "additionalProperties": False,  # operations reject unknown fields (400)
        }
    return {
        "required": bool(required & {_wire(spec, n) for n in spec.body_fields}),
        "content": {"application/json": {"schema": body_schema}},
    }


def _responses(spec: OperationSpec, path: str, schemas: _Schemas) -> dict[str, Any]:
    """The success response (with its links) and every error status, in the envelope."""
    assert spec.rest is not None
    ref, model_schema = schemas.output(spec.result_type, spec.rest.camel)
    if path in spec.rest.listing_b:  # the provisioning spec's listing B writes this answer its own way
        listing_b = str(_LISTING_B_SCHEMA["title"])
        schemas.components[listing_b] = _LISTING_B_SCHEMA
        ref, model_schema = {"$ref": _REF.format(model=listing_b)}, _LISTING_B_SCHEMA
    success: dict[str, Any] = {"description": spec.summary, "content": {"application/json": {"schema": ref}}}
    links = _links(spec, model_schema.get("properties", {}))
    if links:
        success["links"] = links
    error = {"$ref": _REF.format(model="ErrorEnvelope")}
    checked = {}  # a dry run: the same answer, nothing stored, so no links
    if spec.rest.dry_run is not None:
        checked = {
            "200": {"description": f"`{spec.rest.dry_run}`: checked, nothing stored", "content": success["content"]}
        }
    throttled = {}
    why = _TOO_MANY_WHY.get(spec.rest.too_many or "")
    if why is not None:
        throttled = {
            "429": {"description": why, "headers": _RETRY_AFTER, "content": {"application/json": {"schema": error}}}
        }
    return {
        **checked,
        str(spec.rest.status): success,
        **{code: {"description": why, "content": {"application/json": {"schema": error}}} for code, why in _ERRORS},
        **throttled,
    }


def _operation(spec: OperationSpec, path: str, schemas: _Schemas) -> dict[str, Any]:
    assert spec.rest is not None
    full = schemas.input(spec)
    props: dict[str, Any] = full.get("properties", {})
    description = spec.description or spec.summary
    if spec.rest.camel and (spec.body_fields or spec.query_fields):
        description += f"\n\n{CAMEL_NOTE}"
    op: dict[str, Any] = {
        "tags": [spec.category],
        "summary": spec.summary,
        "description": description,
        "operationId": operation_id(spec, path),
        "parameters": _parameters(spec, props),
    }
    if spec.body_fields:
        op["requestBody"] = _request_body(spec, props, set(full.get("required", [])))
    op["responses"] = _responses(spec, path, schemas)
    op["security"] = [] if spec.policy.unauthenticated else SECURITY
    return op


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref.rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _used(paths: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """The components the paths reach (an input model's unused `$defs` would be dead entries)."""
    seen: set[str] = set()
    todo = list(_refs(paths))
    while todo:
        name = todo.pop()
        if name not in seen and name in components:
            seen.add(name)
            todo.extend(_refs(components[name]))
    return {name: schema for name, schema in components.items() if name in seen}


def _path_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """The field's own rules (pattern, length) for a path parameter; always a non-empty string."""
    keep = {k: v for k, v in prop.items() if k in ("pattern", "minLength", "maxLength", "enum", "format")}
    return {"type": "string", "minLength": 1, **keep}


def _with_default(prop: dict[str, Any], name: str, defaults: Any) -> dict[str, Any]:
    return {**prop, "default": defaults[name]} if name in defaults else prop


def build_document(title: str, version: str, description: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every catalog route, /health and the operator routes."""
    from fastapi.openapi.utils import get_openapi

    schemas = _Schemas()
    paths: dict[str, dict[str, Any]] = {}
    routes = [(path, spec) for spec in CATALOG.values() if spec.rest for path in spec.rest.paths]
    for path, spec in sorted(routes, key=lambda r: (route_key(r[0]), r[1].name)):
        assert spec.rest is not None
        paths.setdefault(path, {})[spec.rest.method.lower()] = _operation(spec, path, schemas)
    paths["/health"] = {
        "get": {
            "tags": ["system"],
            "summary": "Liveness and readiness",
            "description": "Whether the service and its store answer (no sign-in needed).",
            "operationId": "health",
            "security": [],
            "responses": {
                "200": {"description": "The store answers", "content": {"application/json": {"schema": _HEALTH}}},
                "503": {
                    "description": "The store does not answer",
                    "content": {"application/json": {"schema": _HEALTH}},
                },
            },
        }
    }
    paths.update(_operator_paths())
    doc = get_openapi(title=title, version=version, description=description, routes=[])
    doc["paths"] = paths
    doc["servers"] = [{"url": "/", "description": "This server"}]
    doc["info"]["license"] = {"name": "Apache-2.0", "identifier": "Apache-2.0"}
    doc["info"]["contact"] = CONTACT
    components = doc.setdefault("components", {})
    components.setdefault("schemas", {}).update(_used(paths, schemas.components))
    components["securitySchemes"] = SECURITY_SCHEMES
    _describe(doc)
    return doc


CONTACT = {"name": "pluginsdk maintainers"}

TAGS: dict[str, str] = {
    "templates": "Machine templates: what a request launches (stored, or loaded from the templates directory).",
    "requests": "Provisioning and return requests, their status and their machines.",
    "machines": "Machines: request, return, read, and their status at the provider.",
    "system": "Health, version, configuration, providers and metrics of the service.",
    "session": "Sign-in to the managed user pool: login, tokens, logout, password and MFA.",
    "bootstrap": "What a web client reads before it signs in (public).",
    "loginProfile": "The caller's own login profile.",
    "constraints": "Permission constraints: who may use which method on which objects.",
    "policy": "Decisions without side effects: check, explain, who-can, what-if and policy tests.",
    "roles": "Roles that constraints grant permissions to.",
    "userRoles": "Which roles each user holds.",
    "routes": "API and web routes, and which of them a caller may use.",
    "apiKeys": "Every user's API keys (administrators).",
    "userApiKeys": "The caller's own API keys.",
    "users": "Users of the managed user pool (administrators).",
    "audit": "The audit log of changes and decisions.",
}
"""Each operation's tag (its category) and what the tag holds."""


def _describe(doc: dict[str, Any]) -> None:
    """Every operation described (its summary where it has no text of its own) and the tags they use listed
    with their descriptions, in the order first used: the last step, over every path the document holds."""
    ops = [op for item in doc["paths"].values() for op in item.values() if isinstance(op, dict)]
    for op in ops:
        if not op.get("description"):
            op["description"] = op.get("summary", "")
    used = dict.fromkeys(tag for op in ops for tag in op.get("tags", ()))
    doc["tags"] = [{"name": tag, "description": TAGS.get(tag, tag)} for tag in used]


_HEALTH = {
    "type": "object",
    "required": ["status", "store"],
    "properties": {"status": {"type": "string"}, "store": {"type": "string"}, "version": {"type": "string"}},
}


def _operator_paths() -> dict[str, Any]:
    """/livez, /readyz and /metrics (`ops.py`): what orchestrators and Prometheus call."""

    def answer(description: str, schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
        return {"description": description, "content": {media: {"schema": schema}}}

    def get(operation_id: str, summary: str, description: str, responses: dict[str, Any]) -> dict[str, Any]:
        return {"get": {"tags": ["system"], "summary": summary, "description": description,
                        "operationId": operation_id, "security": [], "responses": responses}}  # fmt: skip

    error = {"$ref": _REF.format(model="ErrorEnvelope")}
    status = {"type": "string", "const": "ok"}
    live = {"type": "object", "required": ["status"], "properties": {"status": status}}
    ready = {
        "type": "object",
        "required": ["status", "store"],
        "properties": {"status": status, "store": {"type": "string", "const": "ok"}, "schema": {"type": "integer"}},
    }
    metrics = get(
        "metrics",
        "Prometheus metrics",
        "The Prometheus text exposition. Who may read it is the server's `api.metrics`: loopback clients, any "
        "caller whose credential's policy allows GET /metrics, anyone, or no one (404).",
        {
            "200": answer("The metrics", {"type": "string"}, "text/plain"),
            "401": answer("Missing or invalid credentials (`api.metrics: authenticated`)", error),
            "403": answer("Not authorized, or not a loopback client (`api.metrics: loopback`)", error),
            "404": answer("Metrics are off (`api.metrics: off`)", error),
        },
    )
    metrics["get"]["security"] = [{}, *SECURITY]  # a credential only under `api.metrics: authenticated`
    return {
        "/livez": get(
            "livez",
            "Liveness",
            "200 while the process serves; the store is not consulted.",
            {"200": answer("The process serves", live)},
        ),
        "/metrics": metrics,
        "/readyz": get(
            "readyz",
            "Readiness",
            "200 when the store answers and its schema is at this build's migration; else 503 `NOT_READY`, "
            "`details` saying what is missing (`store`, `schema`, `expected`).",
            {"200": answer("Ready", ready), "503": answer("Not ready", error)},
        ),
    }
