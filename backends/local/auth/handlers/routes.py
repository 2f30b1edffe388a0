"""Handlers: route catalogue (derived from the operation catalog), allowed routes, web routes, object checks."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from pluginsdk.errors import ValidationError
from pluginsdk.models.auth_results import (
    AllowedApiRoute,
    AllowedApiRoutes,
    AllowedWebRoute,
    ApiRoute,
    ApiRouteList,
    AuthorizationDecision,
    FilteredObjects,
    WebRoutesAllowed,
)
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES
from pluginsdk.operations import CATALOG
from pluginsdk.operations.routes import (
    AuthorizeWebRoutesQuery,
    FilterAllowedQuery,
    IsAllowedQuery,
    ListAllowedApiRoutesQuery,
    ListApiRoutesQuery,
)

from ...registry import HandlerTable
from ..service import AuthService

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)

_ORDER = ("GET", "POST", "PUT", "DELETE")


def api_routes() -> list[ApiRoute]:
    """Every REST route of the catalog: path template, methods, category, unauthenticated."""
    grouped: dict[tuple[str, bool], dict[str, str]] = defaultdict(dict)
    for spec in CATALOG.values():
        if spec.rest is None:
            continue
        for path in spec.rest.paths:
            grouped[(path, spec.policy.unauthenticated)].setdefault(spec.rest.method, spec.category)
    routes = []
    for (path, unauth), methods in sorted(grouped.items()):
        ordered = sorted(methods, key=lambda m: _ORDER.index(m) if m in _ORDER else len(_ORDER))
        routes.append(ApiRoute(path=path, methods=ordered, category=methods[ordered[0]], unauthenticated=unauth))
    return routes


@handlers.on(ListApiRoutesQuery)
async def list_api_routes(svc: AuthService, op: ListApiRoutesQuery, call: Call) -> ApiRouteList:
    return ApiRouteList(routes=api_routes())


@handlers.on(ListAllowedApiRoutesQuery)
async def list_allowed_api_routes(svc: AuthService, op: ListAllowedApiRoutesQuery, call: Call) -> AllowedApiRoutes:
    principal = call.principal
    out = []
    for route in api_routes():
        methods = [
            m for m in route.methods if route.unauthenticated or await svc.route_allowed(principal, route.path, m)
        ]
        if methods:
            out.append(AllowedApiRoute(path=route.path, methods=methods, category=route.category))
    return AllowedApiRoutes(routes=out, user_id=principal.user_id)


@handlers.on(AuthorizeWebRoutesQuery)
async def authorize_web_routes(svc: AuthService, op: AuthorizeWebRoutesQuery, call: Call) -> WebRoutesAllowed:
    principal = call.principal
    allowed = [
        AllowedWebRoute(method=r.method, route__path=r.route__path)
        for r in op.routes
        if await svc.is_allowed(principal, "web", {"route__path": r.route__path}, r.method)
    ]
    return WebRoutesAllowed(allowed_routes=allowed, email=principal.email or principal.user_id)


def _known_type(object_type: str) -> None:
    known = tuple(OBJECT_TYPES)
    if object_type not in known:
        raise ValidationError(
            f"Unknown object type {object_type!r}; known: {', '.join(known)}.",
            details={"field": "object_type", "value": object_type, "expected": list(known)},
        )


@handlers.on(IsAllowedQuery)
async def is_allowed(svc: AuthService, op: IsAllowedQuery, call: Call) -> AuthorizationDecision:
    principal = call.principal
    _known_type(op.object_type)
    ok = await svc.is_allowed(principal, op.object_type, op.attributes, op.method)
    return AuthorizationDecision(allowed=ok, object_type=op.object_type, method=op.method, user_id=principal.user_id)


@handlers.on(FilterAllowedQuery)
async def filter_allowed(svc: AuthService, op: FilterAllowedQuery, call: Call) -> FilteredObjects:
    principal = call.principal
    _known_type(op.object_type)
    indexed = list(enumerate(op.objects))
    kept = await svc.filter_allowed(principal, op.object_type, indexed, lambda p: p[1], op.method)
    return FilteredObjects(
        allowed=[o for _, o in kept],
        indexes=[i for i, _ in kept],
        object_type=op.object_type,
        method=op.method,
        user_id=principal.user_id,
    )
