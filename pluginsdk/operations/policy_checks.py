"""The policy decision point: decisions for any subject, explanations, who-can, what-if, policy tests.

These routes are for services that protect their own assets with this engine through one service
identity: the caller names the subject (a user id, whose roles come from assignments, or explicit
roles and an MFA flag). Each is its own API route, granted only to `admin` by default — give a
service role the `/auth/check*` (or other) routes to let it ask (see docs/policy.md).
"""

from typing import Annotated, Any, cast

import pydantic
from pydantic import Field, PlainSerializer, PlainValidator, TypeAdapter, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from ..models.auth_results import WebRoute
from ..models.identifiers import ConstraintId, RoleName, UserId, pattern_problem
from ..models.plans import AccessPlan
from ..models.policy_results import (
    AccessQuestion,
    AccessQuestionData,
    Explanation,
    PolicyTest,
    PolicyTestReport,
    SubjectDecision,
    SubjectDecisions,
    SubjectRoutes,
    WhatIfReport,
    WhoCan,
)
from ..models.values import MAX_INT, is_storable, text_problem
from ._base import Cli, Policy, Query, R_co, Rest

__all__ = [
    "CANDIDATE_MAX_USERS",
    "WHAT_IF_MAX_DECISIONS",
    "CheckAccessBatchQuery",
    "CheckAccessQuery",
    "ExplainAccessQuery",
    "ListSubjectRoutesQuery",
    "PlanAccessQuery",
    "RunPolicyTestsQuery",
    "WhatIfQuery",
    "WhoCanQuery",
]

_PDP = Policy(category="policy")
_METHOD = r"^(GET|PUT|POST|DELETE)$"

WHAT_IF_MAX_DECISIONS = 5_000_000
"""Most decisions a what-if (or an import's dry run) may compare: subjects (users and roles) x questions (API
route methods, plus 4 methods per given object). Past it the call is a 400 naming both numbers, before any
comparison."""
CANDIDATE_MAX_USERS = 10_000
"""Most users (and roles, in `role_mfa`) a candidate change may name."""

_CandidateUsers = Annotated[
    dict[UserId, Annotated[list[RoleName], Field(max_length=200)]], Field(max_length=CANDIDATE_MAX_USERS)
]
"""A candidate's user -> the roles it would hold: identifiers as everywhere, bounded."""
_CandidateFlags = Annotated[dict[RoleName, bool], Field(max_length=CANDIDATE_MAX_USERS)]
"""A candidate's role -> mfaRequired."""


class _AboutSubject(Query[R_co]):
    user_id: UserId | None = None
    """The subject's user id: roles are resolved from its assignments unless `roles` is given."""
    roles: list[RoleName] | None = Field(None, max_length=200)
    """Explicit roles instead of the user's assignments; unknown roles grant nothing."""
    mfa: bool = False
    """Whether the subject's session is multi-factor (MFA-only roles count only then)."""
    at_least_revision: int | None = Field(None, ge=0)
    """Answer on at least this policy revision (read your own writes); 409 if the store is behind."""

    def check_together(self) -> None:
        fields = self.__dict__  # one read through pydantic's `__getattr__` hook, not one a field
        if fields["user_id"] is None and fields["roles"] is None:
            raise ValueError("name the subject: user_id, or roles (with mfa)")


class _AboutObject(Query[R_co]):
    """The object a question is about: its type, its attributes, and the method used on it."""

    object_type: str = Field(min_length=1, max_length=64)
    """Permission object type (see get_permission_objects)."""
    attributes: dict[str, Any] = {}
    """The object's attributes by criterion field name."""
    method: str = Field(pattern=_METHOD)
    """GET, PUT, POST or DELETE."""


class CheckAccessQuery(_AboutObject[SubjectDecision], _AboutSubject):
    """Whether a subject (not the caller) may use `method` on an object of `object_type` with these attributes."""

    rest = Rest("POST", "/auth/check", camel=True)
    cli = Cli("auth", "check", args=("object_type", "method"))
    policy = _PDP

    explain: bool = False
    """Include the explanation."""

    def inputs_storable(self) -> bool:
        # The free text is the object type and the attributes: user id, role names and method are ASCII by their
        # patterns (the whole-input walk of `Operation.inputs_storable` cost a quarter of a check).
        fields = self.__dict__  # one read through pydantic's `__getattr__` hook, not one a field
        revision = fields["at_least_revision"]  # an int >= 0 by its field: only the upper bound is left to check
        object_type = fields["object_type"]
        return (
            (revision is None or revision <= MAX_INT)
            and "\x00" not in object_type
            and (object_type.isascii() or text_problem(object_type) is None)
            and is_storable(fields["attributes"], 1)
        )


_Questions = Annotated[list[AccessQuestionData], Field(min_length=1, max_length=10000)]
_QUESTION_FIELDS = set(AccessQuestionData.__annotations__)
_PLAIN = frozenset({dict})
_adapter: TypeAdapter[list[AccessQuestionData]] | None = None


def _problem(error: Any) -> dict[str, str]:
    """{where, problem} of a batch's first validation error; an identifier is described as the single checks do."""
    loc = error["loc"]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    return {"where": where, "problem": pattern_problem(error) or error["msg"]}


def _questions(value: Any, info: ValidationInfo) -> list[AccessQuestionData]:
    """A batch validated in one pass as plain data (`AccessQuestionData`), not a model per question; an
    `AccessQuestion` given in process counts as its fields. Strict where the caller is (a REST body's JSON
    types); each question must name its subject."""
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(_Questions)
    if isinstance(value, tuple) or (isinstance(value, list) and {*map(type, value)} - _PLAIN):  # REST: all dicts
        value = [q.model_dump(include=_QUESTION_FIELDS) if isinstance(q, AccessQuestion) else q for q in value]
    try:
        questions = _adapter.validate_python(value, strict=bool(info.config and info.config.get("strict")))
    except pydantic.ValidationError as exc:
        problem = _problem(exc.errors(include_url=False)[0])
        raise PydanticCustomError("question", "questions{where}: {problem}", problem) from None
    for i, q in enumerate(questions):
        if q.get("user_id") is None and q.get("roles") is None:
            raise PydanticCustomError(
                "subject", "questions[{i}]: name the subject: user_id, or roles (with mfa)", {"i": i}
            )
    return questions


def _as_is(questions: list[AccessQuestionData]) -> list[AccessQuestionData]:
    """The validated questions are plain JSON data already: serialized as they are (the union type the field
    declares for its input made pydantic's serializer try each member per question, 4x slower)."""
    return questions


def _questions_storable(questions: list[AccessQuestionData]) -> bool:
    """`is_storable(questions)` for validated questions, ~3x faster: user ids, role names and methods are
    ASCII by their patterns, so only object types and attributes are checked, their texts in one joined pass.
    Depths as `is_storable` counts them from the operation (questions 1, question 2, attributes 3)."""
    texts: list[str] = []
    for q in questions:
        texts.append(q["object_type"])
        attributes = q.get("attributes")
        if not attributes:
            continue
        texts += attributes
        for v in attributes.values():
            if type(v) is str:
                texts.append(v)
            elif not is_storable(v, 4):
                return False
    return text_problem("".join(texts)) is None


class CheckAccessBatchQuery(Query[SubjectDecisions]):
    """Many (subject, object, method) questions in one call; answers in question order."""

    rest = Rest("POST", "/auth/check/batch", camel=True)
    cli = Cli("auth", "check-batch")
    policy = _PDP
    bounds_own_input = True  # `_questions` keeps each question's values; `_questions_storable` checks them all

    questions: Annotated[
        list[dict[str, Any] | AccessQuestion],
        PlainValidator(_questions, json_schema_input_type=_Questions),
        PlainSerializer(_as_is, return_type=list[dict[str, Any]]),
    ]
    """1-10,000 questions, each {userId | roles (+mfa), objectType, attributes, method}: mappings or
    `AccessQuestion` objects, held as plain `AccessQuestionData`."""
    explain: bool = False
    """Include an explanation with each answer."""
    allowed_only: bool = False
    """Answer with the decisions alone: `allowed`, one boolean per question in order, and no `decisions` (for a
    service that knows its questions: a tenth of the JSON to write and read). Not with `explain`."""
    at_least_revision: int | None = Field(None, ge=0)
    """Answer on at least this policy revision; 409 if the store is behind."""

    @model_validator(mode="after")
    def _one_form(self) -> "CheckAccessBatchQuery":
        if self.explain and self.allowed_only:
            raise ValueError("explain needs the full answers: not with allowed_only")
        return self

    def inputs_storable(self) -> bool:
        questions = cast("list[AccessQuestionData]", self.questions)  # held as plain data (`_questions`)
        return _questions_storable(questions) and is_storable(self.at_least_revision)


class ExplainAccessQuery(_AboutObject[Explanation], _AboutSubject):
    """Why a subject may or may not use `method` on an object: the constraints that allowed or denied it."""

    rest = Rest("POST", "/auth/explain", camel=True)
    cli = Cli("auth", "explain", args=("object_type", "method"))
    policy = _PDP


class WhoCanQuery(_AboutObject[WhoCan]):
    """Which roles and users may use `method` on an object, and which an explicit deny stops."""

    rest = Rest("POST", "/auth/whoCan", camel=True)
    cli = Cli("auth", "who-can", args=("object_type", "method"))
    policy = _PDP

    mfa: bool = False
    """Evaluate as multi-factor sessions (MFA-only roles count)."""
    at_least_revision: int | None = Field(None, ge=0)
    """Answer on at least this policy revision."""


class PlanAccessQuery(_AboutSubject[AccessPlan]):
    """Which objects of a type a subject may use a method on: always, never, or a condition tree to query by."""

    rest = Rest("POST", "/auth/plan", camel=True)
    cli = Cli("auth", "plan", args=("object_type", "method"))
    policy = _PDP

    object_type: str = Field(min_length=1, max_length=64)
    """Permission object type (see get_permission_objects)."""
    method: str = Field(pattern=_METHOD)
    """GET, PUT, POST or DELETE."""


class ListSubjectRoutesQuery(_AboutSubject[SubjectRoutes]):
    """The API routes a subject (user or roles) may call, and which of the given web routes it may open."""

    rest = Rest("POST", "/auth/subjectRoutes", camel=True)
    cli = Cli("auth", "routes-of")
    policy = _PDP

    web_routes: list[WebRoute] = Field([], max_length=500)
    """Web routes to check ({method, route__path})."""


class WhatIfQuery(Query[WhatIfReport]):
    """The decisions a candidate policy change would flip, per subject, route and object — nothing is applied.

    Compared: every API route x method for every subject (each user with assignments or user
    permissions, and each role alone), plus the given `objects` (and with `policy_objects`, the objects of
    every type the policy names) x every method — at most 5,000,000
    decisions (subjects x questions; more is a 400 naming the size).
    """

    rest = Rest("POST", "/auth/whatIf", camel=True)
    cli = Cli("auth", "what-if")
    policy = _PDP

    add_constraints: list[dict[str, Any]] = Field([], max_length=10000)
    """Constraints to add or replace (same id), each shaped like a create_constraint input (its id optional)."""
    delete_constraint_ids: list[ConstraintId] = Field([], max_length=10000)
    """Constraint ids to delete."""
    role_mfa: _CandidateFlags = {}
    """Role name -> whether the role would require MFA (at most 10,000)."""
    user_roles: _CandidateUsers = {}
    """User id -> the roles it would hold (replaces its assignments; at most 10,000 users, 200 roles each)."""
    objects: list[dict[str, Any]] = Field([], max_length=1000)
    """Objects to compare as well, each {object_type, attributes} as check_access takes them."""
    policy_objects: bool = False
    """Compare as well, for each object type the current policy or the candidate names, every stored object the
    caller may read (templates, requests, machines, roles, role assignments) and, for the types the store does
    not hold (assets, databases, ...), the object each of their constraints' criteria names."""
    user_ids: list[UserId] | None = Field(None, max_length=100000)
    """Only these users (default: every known user)."""
    limit: int = Field(1000, ge=1, le=100000)
    """Return at most this many changes (counts stay complete)."""
    at_least_revision: int | None = Field(None, ge=0)
    """Compare against at least this policy revision (read your own writes); 409 if the store is behind."""


class RunPolicyTestsQuery(Query[PolicyTestReport]):
    """Run a policy test suite (expected allow/deny decisions) against the current policy or a candidate.

    Fails (400, naming each mismatch) when a decision differs, unless `fail_on_mismatch` is false —
    so `pluginsdk auth test -f FILE` exits non-zero on a mismatch. A candidate is given like what-if.
    """

    rest = Rest("POST", "/auth/policyTests", camel=True)
    cli = Cli("auth", "test")
    policy = _PDP

    tests: list[PolicyTest] = Field(min_length=1, max_length=10000)
    """The expected decisions: {name, userId | roles (+mfa), objectType, attributes, method, expect}."""
    fail_on_mismatch: bool = True
    """Raise an error naming the mismatches (otherwise only report them)."""
    add_constraints: list[dict[str, Any]] = Field([], max_length=10000)
    """Candidate: constraints to add or replace."""
    delete_constraint_ids: list[ConstraintId] = Field([], max_length=10000)
    """Candidate: constraint ids to delete."""
    role_mfa: _CandidateFlags = {}
    """Candidate: role name -> whether the role requires MFA (at most 10,000)."""
    user_roles: _CandidateUsers = {}
    """Candidate: user id -> roles (at most 10,000 users, 200 roles each)."""
    at_least_revision: int | None = Field(None, ge=0)
    """Run on at least this policy revision (read your own writes); 409 if the store is behind."""
