"""Grants of both tiers in one step: a role may use methods on objects of a type, and call the routes that act
on them (see docs/policy.md, "Two tiers")."""

import hashlib
import json
from typing import Annotated, Any

from pydantic import Field

from ..models.auth import CriterionInput
from ..models.auth_results import AccessGranted
from ..models.auth_vocabulary import OBJECT_TYPES
from ..models.identifiers import CONSTRAINT_ID_PATTERN, RoleName
from ._base import Audit, Cli, Command, Policy, Rest

__all__ = ["GrantAccessCommand"]

_METHOD = r"^(GET|PUT|POST|DELETE)$"
_GRANTABLE: list[Any] = [t for t in OBJECT_TYPES if t not in ("api", "web")]


class GrantAccessCommand(Command[AccessGranted]):
    """Let a role use `methods` on the objects of `object_type` the criteria select — both tiers in one step.

    Writes, in one transaction, the object constraint (tier 2) and, per method, the route constraint (tier 1,
    object type `api`) opening the routes that act on such an object: `GET` on templates whose `templateId`
    starts with `web-` also opens `GET /api/v1/templates/web-*`. A path parameter is narrowed by an `equals` or
    `starts_with` criterion (in `criteria_and`) on the attribute it carries, else any id; other routes such a
    pattern would reach are excluded. Idempotent: the ids derive from the grant (or from `grant_id`), and a
    grant that exists as asked writes nothing; an id holding another constraint is a 409. Needs what creating
    each constraint needs (tier 1 on `POST /auth/constraints/{id}`).
    """

    rest = Rest("POST", "/auth/grants", camel=True)
    cli = Cli("auth", "grant", args=("role_name", "object_type"))
    policy = Policy(
        category="constraints",
        audit=Audit("constraint", ("constraint_ids",), snapshot=True, each_constraint=True),
        writes_policy=True,
    )

    role_name: RoleName
    """The role granted."""
    object_type: str = Field(json_schema_extra={"enum": _GRANTABLE})
    """The objects' type (not `api` or `web`: grant routes with create_constraint)."""
    methods: list[Annotated[str, Field(pattern=_METHOD)]] = Field(min_length=1, max_length=4)
    """GET, PUT, POST and/or DELETE."""
    criteria_and: list[CriterionInput] | None = Field(None, max_length=100)
    """Criteria the objects must all match ({field, operator, value}; `*` matches any run of characters)."""
    criteria_or: list[CriterionInput] | None = Field(None, max_length=100)
    """Criteria of which the objects must match at least one."""
    grant_id: Annotated[str, Field(min_length=1, max_length=120, pattern=CONSTRAINT_ID_PATTERN)] | None = None
    """The object constraint's id (route constraints add `-get`, `-put`, ...); default: derived from the grant."""

    @property
    def base_id(self) -> str:
        """`grant_id`, or `grant-<object type>-<digest of the grant>` (the same grant, the same ids)."""
        if self.grant_id is not None:
            return self.grant_id
        grant = {
            "role": self.role_name,
            "type": self.object_type,
            "methods": sorted(set(self.methods)),
            "and": [c.model_dump() for c in self.criteria_and or []],
            "or": [c.model_dump() for c in self.criteria_or or []],
        }
        digest = hashlib.sha256(json.dumps(grant, sort_keys=True).encode()).hexdigest()[:16]
        return f"grant-{self.object_type}-{digest}"

    @property
    def constraint_ids(self) -> list[str]:
        """The ids this grant writes: the object constraint's, then a route constraint's per method (`-get`, ...;
        written only for a method with routes on the object type)."""
        base = self.base_id
        return [base, *(f"{base}-{m.lower()}" for m in sorted(set(self.methods)))]
