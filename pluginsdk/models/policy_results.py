"""Results of the policy decision point: subject checks, explanations, who-can, what-if, policy tests, audit.

Every answer carries the policy `revision` it was computed on (the store's policy version), so a
caller that wrote at revision N and asks with `at_least_revision=N` can see it read its own write.
"""

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Required

import pydantic
from pydantic import ConfigDict, Field, TypeAdapter, model_validator, with_config
from pydantic.alias_generators import to_camel
from pydantic_core import SchemaSerializer
from typing_extensions import TypedDict  # pydantic needs typing_extensions' TypedDict before 3.12

from ._base import BaseModel
from ._display import Decided, ManyDecided
from .auth_results import AllowedApiRoute, AllowedWebRoute
from .identifiers import ROLE_NAME_PATTERN, USER_ID_PATTERN, RoleName, UserId
from .results import Result

__all__ = [
    "AccessQuestion",
    "AccessQuestionData",
    "AuditPage",
    "AuditRecord",
    "BatchDecision",
    "ConstraintImported",
    "DecisionChange",
    "Explanation",
    "PolicyTest",
    "PolicyTestOutcome",
    "PolicyTestReport",
    "Reason",
    "RouteAccess",
    "SubjectDecision",
    "SubjectDecisions",
    "SubjectRoutes",
    "WhatIfReport",
    "WhoCan",
]


def _absent_if_none(value: Any) -> bool:
    return value is None


_METHOD = r"^(GET|PUT|POST|DELETE)$"
_RoleNameText = Annotated[str, Field(max_length=64, pattern=ROLE_NAME_PATTERN)]
"""A role name checked by its pattern alone (in Rust, for a whole batch; `RoleName` adds the friendly message)."""


# -- inputs -----------------------------------------------------------------------------
class _Subject(BaseModel):
    """A subject: `user_id` (roles from its assignments), or explicit `roles` (+ `mfa`)."""

    model_config = ConfigDict(extra="forbid")

    user_id: UserId | None = None
    """The subject's user id: roles are resolved from its assignments unless `roles` is given."""
    roles: list[RoleName] | None = Field(None, max_length=200)
    """Explicit roles instead of the user's assignments; unknown roles grant nothing."""
    mfa: bool = False
    """Whether the subject's session is multi-factor (MFA-only roles count only then)."""

    @model_validator(mode="after")
    def _named(self) -> "_Subject":
        if self.user_id is None and self.roles is None:
            raise ValueError("name the subject: user_id, or roles (with mfa)")
        return self


class AccessQuestion(_Subject):
    """One question of a batch: subject, object type, attributes, method."""

    object_type: str = Field(min_length=1, max_length=64)
    attributes: dict[str, Any] = {}
    method: str = Field("GET", pattern=_METHOD)


_PLAIN = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True)


@with_config(ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, extra="forbid"))
class AccessQuestionData(TypedDict, total=False):
    """One batch question as plain typed data: `AccessQuestion`'s fields, validated for a whole batch in one
    pass (no model object per question); the same JSON on the wire. Absent: `mfa` false, `attributes` {},
    `method` GET; `user_id` or `roles` must be given."""

    user_id: Annotated[str | None, Field(max_length=256, pattern=USER_ID_PATTERN)]
    roles: Annotated[
        list[Annotated[str, Field(max_length=64, pattern=ROLE_NAME_PATTERN)]] | None, Field(max_length=200)
    ]
    mfa: bool
    object_type: Required[Annotated[str, Field(min_length=1, max_length=64)]]
    attributes: dict[str, Any]
    method: Annotated[str, Field(pattern=_METHOD)]


class PolicyTest(AccessQuestion):
    """One expected decision of a policy test suite."""

    name: str = Field("", max_length=256)
    expect: str = Field(pattern=r"^(allow|deny)$")


class Reason(BaseModel):
    """One line of an explanation.

    kind: `decision` (the outcome), `allowed-by` / `denied-by` (a constraint that matched, and the
    role or user permission through which it applied), `no-allow` (no allow rule matched),
    `skipped-role` (a role that did not count, and why).
    """

    kind: str
    constraint_id: str = ""
    via: str = ""
    """`role:NAME` or `user:ID`: the grant through which the constraint applied."""
    detail: str = ""


class RouteAccess(BaseModel):
    """One API route acting on the object asked about, and whether tier 1 lets the subject call it: a call on the
    object needs both this and the object decision (docs/policy.md, "Two tiers")."""

    method: str
    path: str
    """The path for this object (its id from the attributes), else the route's template."""
    operation: str
    allowed: bool | None = None
    """Whether the subject may call it; None when the path needs an id the attributes do not give."""


class Explanation(Decided, BaseModel):
    """Why a decision came out as it did; `reasons` reads top to bottom (`pluginsdk auth explain` prints it)."""

    reasons: list[Reason] = []
    allowed: bool
    allowed_by: list[Reason] = []
    denied_by: list[Reason] = []
    no_allow_matched: bool = False
    skipped_roles: list[Reason] = []
    roles: list[str] = []
    """The roles the decision was made with (after resolution)."""
    revision: int
    routes: list[RouteAccess] | None = Field(None, exclude_if=_absent_if_none)
    """The API routes acting on such an object with this method, each with tier 1's answer for the subject
    (absent for an object type without routes here, or when the caller may not ask `/auth/subjectRoutes`)."""
    route_allowed: bool | None = Field(None, exclude_if=_absent_if_none)
    """Whether tier 1 allows every one of `routes` (None: none, or one depends on an id not given)."""


class SubjectDecision(Decided, BaseModel):
    """The decision for one (subject, object, method) question."""

    allowed: bool
    object_type: str
    method: str
    user_id: str | None = Field(None, exclude_if=_absent_if_none)
    roles: list[str] | None = Field(None, exclude_if=_absent_if_none)
    """The roles the decision was made with (resolved from assignments for a user id); absent unless the caller
    may read roles and user roles (docs/policy.md, "What each decision route reveals")."""
    mfa: bool = False
    revision: int
    explanation: Explanation | None = Field(None, exclude_if=_absent_if_none)
    routes: list[RouteAccess] | None = Field(None, exclude_if=_absent_if_none)
    """The API routes acting on such an object with this method, each with tier 1's answer for the subject
    (absent for an object type without routes here, or when the caller may not ask `/auth/subjectRoutes`)."""
    route_allowed: bool | None = Field(None, exclude_if=_absent_if_none)
    """Whether tier 1 allows every one of `routes`: the object decision and this together say whether the
    subject's call would pass (None: no routes, or one depends on an id not given)."""

    @classmethod
    def of(
        cls,
        allowed: bool,
        object_type: str,
        method: str,
        *,
        user_id: str | None,
        roles: list[str] | None,
        mfa: bool,
        revision: int,
        explanation: Explanation | None = None,
        routes: list[RouteAccess] | None = None,
        route_allowed: bool | None = None,
    ) -> "SubjectDecision":
        """The engine's answer, built without validation: each field is a value of the field's type the engine
        produced (the decision, the validated question's own values, the revision it read, models it built), so
        validating them again only cost time (≈ 2 µs of a check; `model_construct` costs more than that).
        Every field counts as set, as when `__init__` is given them all."""
        answer = _new(cls)
        _set_dict(
            answer,
            {
                "allowed": allowed,
                "object_type": object_type,
                "method": method,
                "user_id": user_id,
                "roles": roles,
                "mfa": mfa,
                "revision": revision,
                "explanation": explanation,
                "routes": routes,
                "route_allowed": route_allowed,
            },
        )
        _set_fields_set(answer, _SUBJECT_DECISION_FIELDS.copy())
        _set_extra(answer, None)
        _set_private(answer, None)
        return answer


_SUBJECT_DECISION_FIELDS = set(SubjectDecision.__annotations__)
"""Every field of `SubjectDecision`: each answer's own copy is its fields set."""
_new = object.__new__  # bound once each: `SubjectDecision.of` runs on every check
# pydantic's slots set through their own descriptors: `object.__setattr__` looks each up by name first
_set_dict = pydantic.BaseModel.__dict__["__dict__"].__set__
_set_fields_set = pydantic.BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = pydantic.BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = pydantic.BaseModel.__dict__["__pydantic_private__"].__set__


@with_config(_PLAIN)
@dataclass(frozen=True, kw_only=True)
class BatchDecision(Decided):
    """One answer of a batch: `SubjectDecision`'s fields and JSON, as a plain immutable dataclass — built without
    validation and serialized with the batch in one pass (a model per answer cost more than the decision), and
    one object for the questions whose answers are equal (the same subject, object type, method and outcome on
    the same revision, without an explanation)."""

    allowed: bool
    object_type: str
    method: str
    user_id: Annotated[str | None, Field(exclude_if=_absent_if_none)] = None
    roles: Annotated[tuple[str, ...] | None, Field(exclude_if=_absent_if_none)] = None
    """The roles the decision was made with (resolved from assignments for a user id); absent unless the caller
    may read roles and user roles."""
    mfa: bool = False
    revision: int
    explanation: Annotated[Explanation | None, Field(exclude_if=_absent_if_none)] = None

    @classmethod
    def of(
        cls,
        allowed: bool,
        object_type: str,
        method: str,
        *,
        user_id: str | None,
        roles: tuple[str, ...] | None,
        mfa: bool,
        revision: int,
    ) -> "BatchDecision":
        """An answer without an explanation, 3x cheaper than `__init__` (whose frozen fields are each set through
        `object.__setattr__`): a batch builds one per distinct question."""
        answer = object.__new__(cls)
        answer.__dict__.update(
            allowed=allowed,
            object_type=object_type,
            method=method,
            user_id=user_id,
            roles=roles,
            mfa=mfa,
            revision=revision,
            explanation=None,
        )
        return answer

    def camel_json(self) -> bytes:
        """This answer's JSON with camelCase keys, as REST writes it, kept on the answer: it is immutable, and the
        engine shares one answer per distinct question across batches, so a batch's answers are serialized once."""
        kept: bytes | None = self.__dict__.get("_camel_json")
        if kept is None:
            kept = self.__dict__["_camel_json"] = _answer_serializer().to_json(self, by_alias=True)
        return kept


@functools.cache
def _answer_serializer() -> SchemaSerializer:
    """`BatchDecision`'s serializer, built on the first answer written (not at import: the CLI never writes one)."""
    return TypeAdapter(BatchDecision).serializer


class SubjectDecisions(ManyDecided, BaseModel):
    """Answers to a batch of questions, in question order: a `BatchDecision` each, or with `allowed_only` the
    decisions alone (`allowed`, and `decisions` empty)."""

    decisions: list[BatchDecision] = []
    allowed: list[bool] | None = Field(None, exclude_if=_absent_if_none)
    """With `allowed_only`: whether each question is allowed, in question order (absent otherwise)."""
    revision: int

    def to_json_bytes(self, by_alias: bool) -> bytes:
        """The JSON pydantic's serializer writes, joined from the answers' kept JSON (`BatchDecision.camel_json`)
        for the REST form: a tenth of serializing a thousand answers again."""
        if not by_alias or self.allowed is not None or not self.decisions:
            data: bytes = self.__pydantic_serializer__.to_json(self, by_alias=by_alias)
            return data
        answers = b",".join([d.camel_json() for d in self.decisions])
        return b'{"decisions":[%s],"revision":%d}' % (answers, self.revision)


class WhoCan(BaseModel):
    """Who may use a method on one object: roles and users allowed, and those an explicit deny stops."""

    object_type: str
    method: str
    allowed_roles: list[str] = []
    denied_roles: list[str] = []
    """Roles an explicit deny constraint stops for this object (whatever they allow)."""
    mfa_only_roles: list[str] = []
    """Roles that would allow it but count only in multi-factor sessions (not in allowed_roles unless mfa)."""
    allowed_users: list[str] = []
    denied_users: list[str] = []
    revision: int


class SubjectRoutes(BaseModel):
    """The API routes (and checked web routes) a subject can reach."""

    user_id: str | None = Field(None, exclude_if=_absent_if_none)
    roles: list[str] = []
    mfa: bool = False
    routes: list[AllowedApiRoute] = []
    web_routes: list[AllowedWebRoute] = []
    """The given web routes the subject may open."""
    web_route_patterns: list[str] = []
    """route__path patterns of the web constraints that allow this subject something."""
    revision: int


class DecisionChange(BaseModel):
    """One decision that a candidate change would flip."""

    subject: str
    """`user:ID` or `role:NAME`."""
    kind: str
    """`route` (an API route) or `object`."""
    object_type: str
    target: str
    """The route path, or the object's attributes as JSON."""
    method: str
    before: bool
    after: bool


class WhatIfReport(BaseModel):
    """The decisions a candidate change would flip (nothing was applied)."""

    changes: list[DecisionChange] = []
    allowed_to_denied: int = 0
    denied_to_allowed: int = 0
    subjects: int = 0
    questions: int = 0
    """Decisions compared (subjects x routes/objects x methods)."""
    truncated: bool = False
    """More changes than `limit` were found; counts are complete."""
    revision: int


class ConstraintImported(Result):
    """Outcome of a constraint template import."""

    constraint_ids: list[str] = []
    """The constraints written, in template order."""
    what_if: WhatIfReport | None = Field(None, exclude_if=_absent_if_none)
    """Dry run only: the decisions the import would change, as `what_if` answers them; nothing was written."""


class PolicyTestOutcome(BaseModel):
    name: str
    expected: str
    actual: str
    passed: bool


class PolicyTestReport(BaseModel):
    """The outcome of a policy test suite."""

    passed: bool
    total: int
    failures: int
    outcomes: list[PolicyTestOutcome] = []
    revision: int


class AuditRecord(BaseModel):
    """One recorded change (or sampled decision). Immutable: nothing in the API writes or deletes records."""

    record_id: str
    """Sorts by time: the paging key."""
    at: str
    actor: str
    action: str
    """The operation (create_constraint, delete_api_key, ...) or `decision`."""
    target_type: str
    target_id: str = ""
    before: Any = None
    after: Any = None
    revision: int


class AuditPage(BaseModel):
    """Audit records, oldest first, and the token for the next page."""

    records: list[AuditRecord] = []
    next_token: str | None = Field(None, exclude_if=_absent_if_none)
    jsonl: str | None = Field(None, exclude_if=_absent_if_none)
    """The page as JSON lines (one record per line), when asked for."""

    def page_items(self) -> list[AuditRecord]:
        return self.records
