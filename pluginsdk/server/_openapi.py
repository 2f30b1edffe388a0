"""The OpenAPI document, built by FastAPI from the same catalog the server routes, and the /docs page.

Request parameters and bodies come from each operation's model (with field docs), responses from its
result model and the error envelope; every status the server can answer is listed. Links from each
POST's result to the operations whose path parameters it returns (`template_id` -> get, update and delete
of that template) let schemathesis walk create -> read -> update -> delete.
"""

from __future__ import annotations

from typing import Any

from pydantic.alias_generators import to_camel

from ..operations import CATALOG, OperationSpec

__all__ = ["ERROR_SCHEMA", "build_document", "docs_html", "operation_id", "route_key"]

_REF = "#/components/schemas/{model}"

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

SECURITY: list[dict[str, list[str]]] = [{"apiKey": []}, {"bearer": []}]
SECURITY_SCHEMES = {
    "apiKey": {"type": "apiKey", "in": "header", "name": "Authorization", "description": "An API key (psdk_...)"},
    "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
}


def route_key(path: str) -> list[tuple[int, str]]:
    """Literal segments before parameters at each position (`/requests/status` before `/requests/{id}`)."""
    return [(1 if seg.startswith("{") else 0, seg) for seg in path.strip("/").split("/")]


def operation_id(spec: OperationSpec, path: str) -> str:
    assert spec.rest is not None
    return spec.name if path == spec.rest.path else f"{spec.name}_{len(path)}"


class _Schemas:
    """Collects JSON schemas of models into OpenAPI components (pydantic `$defs` moved to components)."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = {"ErrorEnvelope": ERROR_SCHEMA}

    def output(self, model: type[Any], camel: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """The response schema (a $ref) and the model's own schema."""
        suffix = "Camel" if camel else ""
        schema: dict[str, Any] = model.model_json_schema(
            by_alias=camel, mode="serialization", ref_template=_REF.replace("{model}", "{model}" + suffix)
        )
        return self._hoist(schema, suffix, model.__name__), schema

    def input(self, spec: OperationSpec) -> dict[str, Any]:
        spec.field_docs()
        schema: dict[str, Any] = spec.cls.model_json_schema(
            by_alias=False, mode="validation", ref_template=_REF.replace("{model}", "{model}Input")
        )
        schema.pop("title", None)
        return self._hoist(schema, "Input", None)

    def _hoist(self, schema: dict[str, Any], suffix: str, name: str | None) -> dict[str, Any]:
        for def_name, definition in schema.pop("$defs", {}).items():
            self.components[def_name + suffix] = definition
        if name is None:
            return schema
        self.components[name + suffix] = schema
        return {"$ref": _REF.format(model=name + suffix)}


def _links(spec: OperationSpec, result_props: dict[str, Any]) -> dict[str, Any]:
    """Links from a POST's result to every operation whose path parameters it names."""
    assert spec.rest is not None
    if spec.rest.method != "POST":
        return {}
    links: dict[str, Any] = {}
    for other in CATALOG.values():
        if other.rest is None or not other.path_fields or other is spec:
            continue
        params: dict[str, str] = {}
        for name in other.path_fields:
            prop = to_camel(name) if spec.rest.camel else name
            if prop not in result_props:
                break
            params[f"path.{name}"] = f"$response.body#/{prop}"
        else:
            links[other.name] = {"operationId": other.name, "parameters": params}
    return links


def _operation(spec: OperationSpec, path: str, schemas: _Schemas) -> dict[str, Any]:
    assert spec.rest is not None
    full = schemas.input(spec)
    props: dict[str, Any] = full.get("properties", {})
    required = set(full.get("required", []))
    params: list[dict[str, Any]] = [
        {
            "name": n,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "minLength": 1},
            "description": props.get(n, {}).get("description", ""),
        }
        for n in spec.path_fields
    ]
    for n in spec.query_fields:
        prop = dict(props.get(n, {}))
        description = prop.pop("description", "")
        params.append({"name": n, "in": "query", "required": False, "schema": prop, "description": description})
    op: dict[str, Any] = {
        "tags": [spec.category],
        "summary": spec.summary,
        "description": spec.description,
        "operationId": operation_id(spec, path),
        "parameters": params,
    }
    if spec.body_fields:
        if spec.rest.body_field is not None:
            body_schema = props.get(spec.rest.body_field, {"type": "object"})
        else:
            body_schema = {
                "type": "object",
                "properties": {n: props[n] for n in spec.body_fields if n in props},
                "required": [n for n in spec.body_fields if n in required],
                "additionalProperties": False,  # operations reject unknown fields (400)
            }
        op["requestBody"] = {
            "required": bool(required & set(spec.body_fields)),
            "content": {"application/json": {"schema": body_schema}},
        }
    ref, model_schema = schemas.output(spec.result_type, spec.rest.camel)
    success: dict[str, Any] = {"description": spec.summary, "content": {"application/json": {"schema": ref}}}
    links = _links(spec, model_schema.get("properties", {})) if path == spec.rest.path else {}
    if links:
        success["links"] = links
    error = {"$ref": _REF.format(model="ErrorEnvelope")}
    op["responses"] = {
        str(spec.rest.status): success,
        **{code: {"description": why, "content": {"application/json": {"schema": error}}} for code, why in _ERRORS},
    }
    if not spec.policy.unauthenticated:
        op["security"] = SECURITY
    return op


def build_document(title: str, version: str, description: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every catalog route and /health."""
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
            "operationId": "health",
            "responses": {
                "200": {"description": "The store answers", "content": {"application/json": {"schema": _HEALTH}}},
                "503": {
                    "description": "The store does not answer",
                    "content": {"application/json": {"schema": _HEALTH}},
                },
            },
        }
    }
    doc = get_openapi(title=title, version=version, description=description, routes=[])
    doc["paths"] = paths
    components = doc.setdefault("components", {})
    components.setdefault("schemas", {}).update(schemas.components)
    components["securitySchemes"] = SECURITY_SCHEMES
    return doc


_HEALTH = {
    "type": "object",
    "required": ["status", "store"],
    "properties": {"status": {"type": "string"}, "store": {"type": "string"}, "version": {"type": "string"}},
}


def docs_html(openapi_url: str, title: str) -> bytes:
    """The Swagger UI page (FastAPI's) for the document at `openapi_url`."""
    from fastapi.openapi.docs import get_swagger_ui_html

    return bytes(get_swagger_ui_html(openapi_url=openapi_url, title=f"{title} - Swagger UI").body)
