"""Handlers: the policy decision point (checks for any subject, explain, who-can, subject routes, what-if, tests).

Each answer is computed on one policy version read in one transaction (constraints, roles,
assignments) and reports it as `revision`. The model of a version is cached on the service like the
compiled policy, and shares the service's compiled policy when the versions agree.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pluginsdk.errors import PermissionDeniedError, RevisionNotReachedError, ValidationError
from pluginsdk.models.auth import validate_constraint
from pluginsdk.models.auth_results import AllowedApiRoute, AllowedWebRoute
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES
from pluginsdk.models.plans import AccessPlan
from pluginsdk.models.policy_results import (
    AccessQuestionData,
    BatchDecision,
    ConstraintImported,
    DecisionChange,
    Explanation,
    PolicyTest,
    PolicyTestOutcome,
    PolicyTestReport,
    Reason,
    RouteAccess,
    SubjectDecision,
    SubjectDecisions,
    SubjectRoutes,
    WhatIfReport,
    WhoCan,
)
from pluginsdk.operations.policy_checks import (
    WHAT_IF_MAX_DECISIONS,
    CheckAccessBatchQuery,
    CheckAccessQuery,
    ExplainAccessQuery,
    ListSubjectRoutesQuery,
    PlanAccessQuery,
    RunPolicyTestsQuery,
    WhatIfQuery,
    WhoCanQuery,
)
from pluginsdk.operations.roles import ListRolesQuery, ListUserRolesQuery
from pluginsdk.principal import Principal

from ...policy.decision_point import Explained, PolicyModel, Question, diff_models, object_questions
from ...policy.evaluator import read_constraint
from ...policy.plans import plan_access as _plan
from ...registry import HandlerTable
from ..audit import decision_sample_rate, log_decision
from ..object_routes import method_routes
from ..service import AuthService
from .routes import api_routes

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)

__all__ = ["current_model", "dry_run_report", "import_dry_run", "route_questions"]

_NO_ATTRIBUTES: Mapping[str, Any] = MappingProxyType({})
_WAIT_STEP = 0.05
_WAIT_MAX = 2.0


async def current_model(
    svc: AuthService, at_least_revision: int | None = None, version: int | None = None
) -> tuple[int, PolicyModel]:
    """The policy model of the current version (at least `at_least_revision`: waits up to 2 s, else 409
    REVISION_NOT_REACHED).

    The version is the one this operation was authorized on (`version`: `Call.policy_version`), else read
    like the authorizer reads it (`svc.watch`: no statement while a PostgreSQL listener is up); waiting for a
    revision reads the store itself.
    """
    if version is None:
        version = await svc.watch.version(svc.store.policy_version)
    if at_least_revision is not None and version < at_least_revision:
        waited = 0.0
        while version < at_least_revision and waited < _WAIT_MAX:
            await asyncio.sleep(_WAIT_STEP)
            waited += _WAIT_STEP
            version = await svc.store.policy_version()
        if version < at_least_revision:
            raise RevisionNotReachedError(
                f"The policy is at revision {version}, behind the requested {at_least_revision}.",
                details={"field": "at_least_revision", "value": at_least_revision, "expected": f"<= {version}"},
            )
    cached = svc.decision_model
    if cached is not None and cached[0] == version:
        return cached
    async with svc.store.transaction():
        version, read = await svc.read_rules()
        assignment_rows = await svc.store.user_role_rows(None)
    rules = svc.compiled_rules(read)  # outside the transaction: a compile holds no lock
    assignments: dict[str, list[str]] = {}
    for r in assignment_rows:
        assignments.setdefault(r["user_id"], []).append(r["role_name"])
    if cached is not None and cached[1].policy is rules.policy:  # only assignments changed: keep the indexes
        model = cached[1].reassigned(assignments)
    else:
        model = PolicyModel(
            rules.constraints,
            rules.roles,
            assignments,
            default_role=svc.config.default_user_role_name,
            policy=rules.policy,
        )
    svc.decision_model = (version, model)
    return version, model


def _known_type(object_type: str, where: str = "object_type") -> None:
    if object_type not in OBJECT_TYPES:
        known = list(OBJECT_TYPES)
        raise ValidationError(
            f"Unknown object type {object_type!r}; known: {', '.join(known)}.",
            details={"field": where, "value": object_type, "expected": known},
        )


def _may_explain(svc: AuthService, principal: Principal) -> None:
    """An explanation (`explain` on a check) is what `/auth/explain` answers: refused as that route refuses."""
    spec = ExplainAccessQuery.spec
    if not svc.may_call(principal, spec):
        raise PermissionDeniedError(
            f"Not authorized: '{principal.user_id}' may not {spec.method} {spec.route} (asked for by explain).",
            details={"field": "explain", "value": True, "expected": f"{spec.method} {spec.route}"},
        )


_ANSWER_RIGHTS = (ListUserRolesQuery.spec.name, ListRolesQuery.spec.name, ListSubjectRoutesQuery.spec.name)
"""The routes whose answers a check's answer would repeat (`_rights`)."""


def _rights(svc: AuthService, principal: Principal) -> tuple[bool, bool]:
    """(`_may_read_roles`, `_may_see_routes`), asked of the service once per caller and policy version."""
    user_roles, roles, subject_routes = svc.may_call_each(principal, _ANSWER_RIGHTS)
    return user_roles and roles, subject_routes


def _may_read_roles(svc: AuthService, principal: Principal) -> bool:
    """Whether a check may name the subject's roles: they tell which roles a user holds and which role names
    exist, what the caller reads through the user-roles and roles listings — so only a caller that may call both."""
    return _rights(svc, principal)[0]


_Routes = tuple[list[RouteAccess] | None, bool | None]
"""The routes acting on the object asked about, each with tier 1's answer, and whether it allows them all."""
_NO_ROUTES: _Routes = (None, None)


def _may_see_routes(svc: AuthService, principal: Principal) -> bool:
    """Whether a check may tell which routes the subject may call: what `/auth/subjectRoutes` answers."""
    return _rights(svc, principal)[1]


def _routes(model: PolicyModel, p: Principal, object_type: str, method: str, attributes: Mapping[str, Any]) -> _Routes:
    """(the routes acting on such an object with this method and tier 1's answer on each for the subject, whether
    it allows them all); (None, None) for an object type without such routes here."""
    found = method_routes(object_type, method)  # the method is upper-case by its pattern
    if not found:
        return None, None
    routes = []
    for r in found:
        path = r.concrete(attributes)
        allowed = None if path is None else model.policy.route_allowed(p, path, r.method)
        routes.append(RouteAccess(method=r.method, path=path or r.template, operation=r.operation, allowed=allowed))
    verdict = (
        False if any(r.allowed is False for r in routes) else None if any(r.allowed is None for r in routes) else True
    )
    return routes, verdict


def _explanation(e: Explained, revision: int, routes: _Routes = _NO_ROUTES) -> Explanation:
    allowed_by = [Reason(kind="allowed-by", constraint_id=c, via=v) for c, v in e.allowed_by]
    denied_by = [
        Reason(kind="denied-by", constraint_id=c, via=v, detail="an explicit deny wins") for c, v in e.denied_by
    ]
    skipped = [Reason(kind="skipped-role", via=f"role:{r}", detail=why) for r, why in e.skipped]
    no_allow = not e.allowed_by
    head = Reason(
        kind="decision",
        detail=("ALLOW" if e.allowed else "DENY") + f" (roles: {', '.join(e.roles) or 'none'})",
    )
    reasons = [head, *allowed_by, *denied_by]
    if no_allow:
        reasons.append(Reason(kind="no-allow", detail="no allow constraint matched"))
    reasons += skipped
    shown = {True: "tier 1 allows", False: "tier 1 denies", None: "tier 1 decides by the id"}
    reasons += [Reason(kind="route", detail=f"{r.method} {r.path}: {shown[r.allowed]}") for r in routes[0] or ()]
    return Explanation(
        reasons=reasons,
        allowed=e.allowed,
        allowed_by=allowed_by,
        denied_by=denied_by,
        no_allow_matched=no_allow,
        skipped_roles=skipped,
        roles=list(e.roles),
        revision=revision,
        routes=routes[0],
        route_allowed=routes[1],
    )


def _explain(model: PolicyModel, q: CheckAccessQuery | ExplainAccessQuery) -> Explained:
    p = model.subject(q.user_id, q.roles, q.mfa, keep_unknown=True)
    return model.explain(p, q.object_type, q.attributes, q.method)


_Key = tuple[str | None, tuple[str, ...] | None, bool, str, str]
"""(user id, explicit roles, mfa, object type, method): a question without its object."""
_Entry = list[Any]
"""[decide, the subject's roles, the deny answer, the allow answer, and both again without the roles]: one per
distinct `_Key`."""
_ANSWERS_KEPT = 100_000
"""Distinct `_Key` entries kept per policy model (cleared when full)."""


def _entry(model: PolicyModel, key: _Key) -> _Entry:
    user_id, roles, mfa, object_type, method = key
    p = model.subject(user_id, roles, mfa)
    return [model.policy.decider(p, object_type, method), p.roles, None, None, None, None]


def _kept(entries: dict[_Key, _Entry], model: PolicyModel, key: _Key) -> _Entry:
    """The entry of `key`, made on its first question (a batch's loops build the key inline: a call per question
    cost 2 % of a batch)."""
    entry = entries.get(key)
    if entry is None:
        entry = entries[key] = _entry(model, key)
    return entry


def _entries(model: PolicyModel) -> dict[_Key, _Entry]:
    """The answers kept with `model` (`PolicyModel.answers`), emptied when full."""
    entries: dict[_Key, _Entry] = model.answers
    if len(entries) >= _ANSWERS_KEPT:
        entries.clear()
    return entries


def _key(q: AccessQuestionData) -> _Key:
    """The kept rules' key of a question: its subject, object type and method."""
    roles = q.get("roles")
    return (
        q.get("user_id"),
        None if roles is None else tuple(roles),
        q.get("mfa", False),
        q["object_type"],
        q.get("method", "GET"),
    )


def _allowed(model: PolicyModel, questions: Sequence[AccessQuestionData]) -> list[bool]:
    """A batch's decisions alone (`allowed_only`), through the same kept rules as `_answers`."""
    entries = _entries(model)
    out = []
    for q in questions:
        key = _key(q)
        out.append((entries.get(key) or _kept(entries, model, key))[0](q.get("attributes", _NO_ATTRIBUTES)))
    return out


def _answers(
    model: PolicyModel,
    revision: int,
    questions: Sequence[AccessQuestionData],
    explain: bool,
    *,
    show_roles: bool = True,
    show_routes: bool = False,
) -> list[BatchDecision]:
    """A batch's answers as `BatchDecision`s, built typed (no validation of our own output).

    Each distinct (subject, object type, method) looks its rules up once per policy model
    (`CompiledPolicy.decider`, kept with the model), and its possible answers (allowed or not, with the roles or
    without) are built on first need and shared: one immutable object for every equal answer of this model's
    revision, across batches.
    """
    entries = _entries(model)
    hidden = 0 if show_roles else 2
    out = []
    for q in questions:
        key = _key(q)
        entry = entries.get(key) or _kept(entries, model, key)
        attributes = q.get("attributes", _NO_ATTRIBUTES)
        allowed: bool = entry[0](attributes)
        slot = 2 + hidden + allowed
        answer: BatchDecision | None = entry[slot]
        if answer is None:
            answer = entry[slot] = BatchDecision.of(
                allowed,
                key[3],
                key[4],
                user_id=key[0],
                roles=entry[1] if show_roles else None,
                mfa=key[2],
                revision=revision,
            )
        if explain:
            user_id, named_roles, mfa, object_type, method = key
            named = model.subject(user_id, named_roles, mfa, keep_unknown=True)
            why = model.explain(named, object_type, attributes, method)
            routes = _routes(model, model.subject(user_id, named_roles, mfa), object_type, method, attributes)
            answer = replace(answer, explanation=_explanation(why, revision, routes if show_routes else _NO_ROUTES))
        out.append(answer)
    return out


async def _log(svc: AuthService, principal: Principal, decisions: Sequence[SubjectDecision | BatchDecision]) -> None:
    """Sampled decision logging (app.audit.decisionSampleRate; off by default), of answers with their roles."""
    if decision_sample_rate(svc) <= 0:
        return
    for d in decisions:
        roles = d.roles or ()
        about = {
            "subject": d.user_id or "roles:" + ",".join(roles),
            "roles": roles,
            "mfa": d.mfa,
            "object_type": d.object_type,
            "method": d.method,
        }
        await log_decision(svc, principal.user_id, about, allowed=d.allowed, revision=d.revision)


_answer = SubjectDecision.of
"""Bound once: a model class's attribute is read through pydantic's metaclass `__getattr__` hook, which costs a
Python call each time."""


@handlers.on(CheckAccessQuery)
async def check_access(svc: AuthService, op: CheckAccessQuery, call: Call) -> SubjectDecision:
    principal = call.principal
    # the fields read from `__dict__`: every read of a model's attribute passes pydantic's `__getattr__` hook
    given = op.__dict__
    object_type, method, attributes, user_id, mfa, explain = (
        given["object_type"],
        given["method"],
        given["attributes"],
        given["user_id"],
        given["mfa"],
        given["explain"],
    )
    if object_type not in OBJECT_TYPES:
        _known_type(object_type)
    if explain:
        _may_explain(svc, principal)
    kept = svc.decision_model
    at_least = given["at_least_revision"]
    if kept is not None and kept[0] == call.policy_version and at_least is None:
        revision, model = kept  # `current_model`'s answer for the version authorized on, without its frame
    else:
        revision, model = await current_model(svc, at_least, call.policy_version)
    p = model.subject(user_id, given["roles"], mfa)
    read_roles, see_routes = _rights(svc, principal)
    routes = _routes(model, p, object_type, method, attributes) if see_routes else _NO_ROUTES
    decision = _answer(
        model.policy.is_allowed(p, object_type, attributes, method),
        object_type,
        method,
        user_id=user_id,
        roles=list(p.roles) if read_roles else None,
        mfa=mfa,
        revision=revision,
        explanation=_explanation(_explain(model, op), revision, routes) if explain else None,
        routes=routes[0],
        route_allowed=routes[1],
    )
    if svc.config.decision_sample_rate > 0:  # `decision_sample_rate`; the log names roles the caller may not be told
        await _log(svc, principal, [decision if read_roles else decision.model_copy(update={"roles": list(p.roles)})])
    return decision


@handlers.on(CheckAccessBatchQuery)
async def check_access_batch(svc: AuthService, op: CheckAccessBatchQuery, call: Call) -> SubjectDecisions:
    principal = call.principal
    questions = cast("list[AccessQuestionData]", op.questions)  # held as plain data (see the operation)
    for i, q in enumerate(questions):
        if q["object_type"] not in OBJECT_TYPES:
            _known_type(q["object_type"], f"questions[{i}].object_type")
    if op.explain:
        _may_explain(svc, principal)
    revision, model = await current_model(svc, op.at_least_revision, call.policy_version)
    logged = decision_sample_rate(svc) > 0
    if op.allowed_only and not logged:  # else the answers are built, to be logged
        return SubjectDecisions.model_construct(decisions=[], allowed=_allowed(model, questions), revision=revision)
    show_roles = _may_read_roles(svc, principal)
    show_routes = op.explain and _may_see_routes(svc, principal)
    decisions = _answers(
        model, revision, questions, op.explain, show_roles=show_roles or logged, show_routes=show_routes
    )
    await _log(svc, principal, decisions)
    if not show_roles and logged:
        decisions = [replace(d, roles=None) for d in decisions]
    allowed = [d.allowed for d in decisions] if op.allowed_only else None
    return SubjectDecisions.model_construct(
        decisions=[] if op.allowed_only else decisions, allowed=allowed, revision=revision
    )


@handlers.on(ExplainAccessQuery)
async def explain_access(svc: AuthService, op: ExplainAccessQuery, call: Call) -> Explanation:
    principal = call.principal
    _known_type(op.object_type)
    revision, model = await current_model(svc, op.at_least_revision, call.policy_version)
    routes = _NO_ROUTES
    if _may_see_routes(svc, principal):
        routes = _routes(model, model.subject(op.user_id, op.roles, op.mfa), op.object_type, op.method, op.attributes)
    return _explanation(_explain(model, op), revision, routes)


@handlers.on(PlanAccessQuery)
async def plan_access(svc: AuthService, op: PlanAccessQuery, call: Call) -> AccessPlan:
    _known_type(op.object_type)
    revision, model = await current_model(svc, op.at_least_revision, call.policy_version)
    return _plan(model.policy, model.subject(op.user_id, op.roles, op.mfa), op.object_type, op.method, revision)


@handlers.on(WhoCanQuery)
async def who_can(svc: AuthService, op: WhoCanQuery, call: Call) -> WhoCan:
    _known_type(op.object_type)
    revision, model = await current_model(svc, op.at_least_revision, call.policy_version)
    found = model.who_can(op.object_type, op.attributes, op.method, mfa=op.mfa)
    return WhoCan(object_type=op.object_type, method=op.method, revision=revision, **found)


@handlers.on(ListSubjectRoutesQuery)
async def list_subject_routes(svc: AuthService, op: ListSubjectRoutesQuery, call: Call) -> SubjectRoutes:
    revision, model = await current_model(svc, op.at_least_revision, call.policy_version)
    p = model.principal(op.user_id, op.roles, op.mfa)
    policy = model.policy
    routes = []
    for route in api_routes():
        methods = [m for m in route.methods if route.unauthenticated or policy.route_allowed(p, route.path, m)]
        if methods:
            routes.append(AllowedApiRoute(path=route.path, methods=methods, category=route.category))
    web = [
        AllowedWebRoute(method=r.method, route__path=r.route__path)
        for r in op.web_routes
        if policy.route_allowed(p, r.route__path, r.method, object_type="web")
    ]
    return SubjectRoutes(
        user_id=op.user_id,
        roles=list(p.roles),
        mfa=op.mfa,
        routes=routes,
        web_routes=web,
        web_route_patterns=model.web_patterns(p),
        revision=revision,
    )


# -- what if ---------------------------------------------------------------------------
def route_questions() -> list[Question]:
    """Every API route template x each of its methods (the tier-1 questions of a what-if)."""
    return [
        Question("route", "api", {"route__path": r.path}, m, r.path)
        for r in api_routes()
        if not r.unauthenticated
        for m in r.methods
    ]


def _validated_constraints(raw: Sequence[Mapping[str, Any]], where: str) -> list[dict[str, Any]]:
    out = []
    for i, given in enumerate(raw):
        body = dict(given)
        cid = body.get("constraintId") or body.get("constraint_id") or str(uuid.uuid4())
        body.pop("constraint_id", None)
        body.pop("identifier", None)
        try:
            c = validate_constraint({**body, "constraintId": cid})
        except ValidationError as exc:
            raise ValidationError(f"{where}[{i}]: {exc.message}", details=exc.details) from None
        out.append(c.model_dump(mode="json", by_alias=True))
    return out


def _candidate(model: PolicyModel, op: WhatIfQuery | RunPolicyTestsQuery) -> PolicyModel:
    return model.candidate(
        add=_validated_constraints(op.add_constraints, "add_constraints"),
        delete=op.delete_constraint_ids,
        role_mfa=op.role_mfa,
        user_roles=op.user_roles,
    )


_T = TypeVar("_T")


async def _off_loop(svc: AuthService, work: Callable[[], _T]) -> _T:
    """`work()` in a worker thread, as many at once as `svc.policy_workers` lets: a what-if or a candidate's
    compile costs up to seconds of CPU, and the event loop keeps answering (/livez, decisions) meanwhile. The
    policy models it reads are shared with the loop; their caches are plain dicts filled idempotently."""
    async with svc.policy_workers:
        return await asyncio.to_thread(work)


def _check_size(
    model: PolicyModel,
    questions: int,
    *,
    added: Sequence[Mapping[str, Any]] = (),
    user_roles: Mapping[str, Any] | None = None,
    user_ids: Sequence[str] | None = None,
    field: str = "objects",
) -> None:
    """Refuse a comparison larger than `WHAT_IF_MAX_DECISIONS` before any of it is done: subjects (the users
    it would compare — as given, or every user the current policy and the candidate know — and every role)
    x questions."""
    if user_ids is not None:
        users = len(user_ids)
    else:
        known = {*model.users(), *(user_roles or {})}
        for c in added:
            known.update(who for who, _, _ in read_constraint(c)[4])
        users = len(known)
    subjects = users + len(model.roles)
    size = subjects * questions
    if size > WHAT_IF_MAX_DECISIONS:
        raise ValidationError(
            f"The comparison is too large: {subjects:,} subjects x {questions:,} questions = {size:,} decisions, "
            f"more than the {WHAT_IF_MAX_DECISIONS:,} allowed; name fewer users (user_ids) or objects.",
            details={"field": field, "value": size, "expected": f"at most {WHAT_IF_MAX_DECISIONS} decisions"},
        )


def _report(
    before: PolicyModel,
    after: PolicyModel,
    revision: int,
    *,
    objects: Sequence[Mapping[str, Any]] = (),
    user_ids: Sequence[str] | None = None,
    limit: int = 1000,
) -> WhatIfReport:
    questions = route_questions() + object_questions(objects)
    diff = diff_models(before, after, questions, user_ids=user_ids, keep=limit)
    return WhatIfReport(
        changes=[
            DecisionChange(
                subject=s, kind=q.kind, object_type=q.object_type, target=q.target, method=q.method, before=b, after=a
            )
            for s, q, b, a in diff.changes
        ],
        allowed_to_denied=diff.allowed_to_denied,
        denied_to_allowed=diff.denied_to_allowed,
        subjects=diff.subjects,
        questions=diff.compared,
        truncated=diff.found > limit,
        revision=revision,
    )


_STORED_TYPES = ("template", "request", "machine", "role", "userRole")
"""The object types the store holds (what `policy_objects` reads); the others are named by criteria only."""


def _named_types(model: PolicyModel, added: Sequence[Mapping[str, Any]]) -> set[str]:
    """The object types the current policy's constraints or the candidate's added ones protect (routes aside)."""
    return {read_constraint(c)[0] for c in (*model.constraints, *added)} - {"api"}


def _criteria_objects(object_type: str, constraints: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For a type the store does not hold (an asset, a database, a web route): per constraint of that type, the
    object its criteria name (every `criteria_and` value together, each `criteria_or` value alone)."""
    out: list[dict[str, Any]] = []
    for c in constraints:
        kind, all_of, any_of, _, _ = read_constraint(c)
        if kind != object_type:
            continue
        if all_of:
            out.append({"objectType": kind, "attributes": {f: _named_value(v, op) for f, v, op in all_of}})
        out.extend({"objectType": kind, "attributes": {f: _named_value(v, op)}} for f, v, op in any_of)
    return out


def _named_value(value: str, operator: str) -> str:
    """A value a criterion matches (for a list of patterns, its first)."""
    return value.split(",", maxsplit=1)[0].strip() if operator in ("is_one_of", "is_not_one_of") else value


async def policy_objects(
    svc: AuthService, principal: Principal, model: PolicyModel, added: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The objects a what-if with `policy_objects` compares: of each type the current policy or the candidate
    names, every stored object `principal` may read (templates, requests, machines, roles, role assignments),
    and for the types the store does not hold the objects their constraints' criteria name. Each type reads at
    most one object more than a what-if may compare, so an oversized comparison is refused, never cut short."""
    from ..objects import KINDS  # the attributes enforcement decides on (one function per type)

    cap = WHAT_IF_MAX_DECISIONS // 4 + 1
    objects = svc.objects
    out: list[dict[str, Any]] = []
    for object_type in sorted(_named_types(model, added)):
        attrs: list[dict[str, Any]]
        if object_type == "template":
            attrs = [KINDS["template"].attrs(t) for t in await objects.templates(cap)]
        elif object_type == "request":
            attrs = [KINDS["request"].attrs(r) for r in await objects.requests(cap)]
        elif object_type == "machine":
            attrs = [KINDS["machine"].attrs(m) for m in await objects.machines(cap)]
        elif object_type == "role":
            attrs = [{"roleName": r["role_name"]} for r in await svc.store.list_roles()]
        elif object_type == "userRole":
            rows = await svc.store.user_role_rows(None)
            attrs = [{"userId": r["user_id"], "roleName": r["role_name"]} for r in rows[:cap]]
        else:
            out.extend(_criteria_objects(object_type, [*model.constraints, *added]))
            continue
        readable = await svc.filter_allowed(principal, object_type, attrs, lambda a: a, "GET")
        out.extend({"objectType": object_type, "attributes": a} for a in readable)
    return out


@handlers.on(WhatIfQuery)
async def what_if(svc: AuthService, op: WhatIfQuery, call: Call) -> WhatIfReport:
    for i, o in enumerate(op.objects):
        _known_type(str(o.get("objectType") or o.get("object_type") or ""), f"objects[{i}].objectType")
    revision, model = await current_model(svc, op.at_least_revision, call.policy_version)
    if op.policy_objects:
        added = _validated_constraints(op.add_constraints, "add_constraints")
        named = await policy_objects(svc, call.principal, model, added)
        op = op.model_copy(update={"objects": [*op.objects, *named]})
    return await _what_if(svc, model, revision, op)


async def _what_if(svc: AuthService, model: PolicyModel, revision: int, op: WhatIfQuery) -> WhatIfReport:
    """Off the event loop: validate the candidate, bound the comparison (before any of it), compile, compare."""

    def work() -> WhatIfReport:
        added = _validated_constraints(op.add_constraints, "add_constraints")
        questions = len(route_questions()) + 4 * len(op.objects)
        _check_size(model, questions, added=added, user_roles=op.user_roles, user_ids=op.user_ids)
        after = model.candidate(
            add=added, delete=op.delete_constraint_ids, role_mfa=op.role_mfa, user_roles=op.user_roles
        )
        return _report(model, after, revision, objects=op.objects, user_ids=op.user_ids, limit=op.limit)

    return await _off_loop(svc, work)


async def dry_run_report(svc: AuthService, constraints: Sequence[Mapping[str, Any]]) -> WhatIfReport:
    """What importing these (validated, wire-shaped) constraints would change (constraintsTemplateImport dry run)."""
    revision, model = await current_model(svc)

    def work() -> WhatIfReport:
        _check_size(model, len(route_questions()), added=constraints, field="constraints")
        return _report(model, model.candidate(add=constraints), revision)

    return await _off_loop(svc, work)


async def import_dry_run(svc: AuthService, ids: list[str], constraints: list[dict[str, Any]]) -> ConstraintImported:
    """constraintsTemplateImport with dry_run: the validated template's what-if; nothing is written."""
    report = await dry_run_report(svc, constraints)
    return ConstraintImported(
        message=f"Dry run: importing {len(ids)} constraint(s) would change {len(report.changes)} decision(s).",
        constraint_ids=ids,
        what_if=report,
    )


# -- policy tests ---------------------------------------------------------------------------
def _outcomes(model: PolicyModel, tests: Sequence[PolicyTest]) -> list[PolicyTestOutcome]:
    out = []
    for i, t in enumerate(tests):
        p = model.subject(t.user_id, t.roles, t.mfa)
        actual = "allow" if model.policy.is_allowed(p, t.object_type, t.attributes, t.method) else "deny"
        name = t.name or f"tests[{i}]"
        out.append(PolicyTestOutcome(name=name, expected=t.expect, actual=actual, passed=actual == t.expect))
    return out


def _mismatch(failed: Sequence[PolicyTestOutcome], total: int) -> ValidationError:
    """The error of a run with `fail_on_mismatch`: the first 20 mismatches named in the message."""
    shown = "; ".join(f"{o.name}: expected {o.expected}, got {o.actual}" for o in failed[:20])
    more = f" (and {len(failed) - 20} more)" if len(failed) > 20 else ""
    return ValidationError(
        f"Policy test failed: {len(failed)} of {total} decision(s) differ — {shown}{more}.",
        details={"field": "tests", "value": [o.name for o in failed[:100]], "expected": "every decision as expected"},
    )


@handlers.on(RunPolicyTestsQuery)
async def run_policy_tests(svc: AuthService, op: RunPolicyTestsQuery, call: Call) -> PolicyTestReport:
    for i, t in enumerate(op.tests):
        _known_type(t.object_type, f"tests[{i}].object_type")
    revision, model = await current_model(svc, op.at_least_revision, call.policy_version)
    changed = op.add_constraints or op.delete_constraint_ids or op.role_mfa or op.user_roles
    outcomes = await _off_loop(svc, lambda: _outcomes(_candidate(model, op) if changed else model, op.tests))
    failed = [o for o in outcomes if not o.passed]
    if failed and op.fail_on_mismatch:
        raise _mismatch(failed, len(outcomes))
    return PolicyTestReport(
        passed=not failed, total=len(outcomes), failures=len(failed), outcomes=outcomes, revision=revision
    )
