"""Route authorization: the API route catalogue, the caller's allowed routes, web routes, object checks."""

from typing import Any

from pydantic import Field

from ..models.auth_results import (
    AllowedApiRoutes,
    ApiRouteList,
    AuthorizationDecision,
    FilteredObjects,
    WebRoute,
    WebRoutesAllowed,
)
from ._base import Cli, Policy, Query, Rest

__all__ = [
    "AuthorizeWebRoutesQuery",
    "FilterAllowedQuery",
    "IsAllowedQuery",
    "ListAllowedApiRoutesQuery",
    "ListApiRoutesQuery",
]

_ROUTES = Policy(category="routes")
_METHOD = r"^(GET|PUT|POST|DELETE)$"


class ListApiRoutesQuery(Query[ApiRouteList]):
    """List every API route of the service (path, methods, category, unauthenticated)."""

    rest = Rest("GET", "/auth/routes/api", camel=True)
    cli = Cli("routes", "api")
    policy = _ROUTES


class ListAllowedApiRoutesQuery(Query[AllowedApiRoutes]):
    """List the API routes and methods the caller may use."""

    rest = Rest("GET", "/auth/routes/api/allowed", camel=True)
    cli = Cli("routes", "allowed")
    policy = _ROUTES


class AuthorizeWebRoutesQuery(Query[WebRoutesAllowed]):
    """Check web-client routes: returns the ones the caller may open."""

    rest = Rest("POST", "/auth/routes", camel=True)
    cli = Cli("routes", "check-web", args=("routes",))
    policy = _ROUTES

    routes: list[WebRoute] = Field(min_length=1, max_length=500)
    """1-500 entries of {method, route__path} (route__path up to 512 characters)."""


class IsAllowedQuery(Query[AuthorizationDecision]):
    """Whether the caller may use `method` on an object of `object_type` with these attributes.

    For services that protect their own assets with this engine: the object
    type is any of the permission objects (asset, database, ...), the
    attributes are its criterion fields (databaseId, assetName, tags, ...).
    """

    rest = Rest("POST", "/auth/authorize", camel=True)
    cli = Cli("auth", "is-allowed", args=("object_type", "method"))
    policy = _ROUTES

    object_type: str = Field(min_length=1, max_length=64)
    """Permission object type (see get_permission_objects)."""
    attributes: dict[str, Any] = {}
    """The object's attributes by criterion field name; list values (tags) match when any element matches."""
    method: str = Field("GET", pattern=_METHOD)
    """GET, PUT, POST or DELETE."""


class FilterAllowedQuery(Query[FilteredObjects]):
    """The objects (attribute dicts) the caller may use `method` on, in input order."""

    rest = Rest("POST", "/auth/authorize/filter", camel=True)
    cli = Cli("auth", "filter-allowed", args=("object_type",))
    policy = _ROUTES

    object_type: str = Field(min_length=1, max_length=64)
    """Permission object type."""
    objects: list[dict[str, Any]] = Field([], max_length=100000)
    """Objects as attribute dicts."""
    method: str = Field("GET", pattern=_METHOD)
    """GET, PUT, POST or DELETE."""
