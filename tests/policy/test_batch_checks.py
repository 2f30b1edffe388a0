"""Batch checks held as plain data: the same answers and the same JSON as one check per question, on every
interface — mappings and `AccessQuestion` objects in, `BatchDecision`s out, a bad question named."""

from __future__ import annotations

from typing import Any

import httpx
import pydantic
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pluginsdk import PluginSDK, ValidationError
from pluginsdk.models import AccessQuestion, AccessQuestionData, BatchDecision, Explanation, Reason, SubjectDecisions
from pluginsdk.models.values import is_storable
from pluginsdk.operations.policy_checks import CheckAccessBatchQuery, CheckAccessQuery
from tests.policy.test_decision_point import _setup, project_constraint

ASSET = {"databaseId": "proj-1"}
QUESTIONS: list[dict[str, Any]] = [
    {"userId": "alice", "objectType": "asset", "attributes": ASSET, "method": "PUT"},
    {"user_id": "alice", "object_type": "asset", "attributes": {"databaseId": "proj-secret"}, "method": "PUT"},
    {"userId": "bob", "objectType": "asset", "attributes": ASSET, "method": "DELETE"},
    {"userId": "bob", "mfa": True, "objectType": "asset", "attributes": ASSET, "method": "DELETE"},
    {"roles": ["secure", "no-such-role"], "mfa": True, "objectType": "asset", "attributes": ASSET, "method": "DELETE"},
    {"roles": [], "objectType": "asset", "attributes": ASSET},  # method GET by default
    {"userId": "mallory", "objectType": "asset"},  # no attributes, no roles
]


def _single(q: dict[str, Any]) -> dict[str, Any]:
    """The question as check_access's parameters."""
    names = {"userId": "user_id", "objectType": "object_type"}
    out = {names.get(k, k): v for k, v in q.items()}
    out.setdefault("method", "GET")
    return out


async def test_a_batch_answers_as_one_check_per_question(sdk: PluginSDK) -> None:
    await _setup(sdk)
    given: list[Any] = [*QUESTIONS[:3], AccessQuestion(user_id="bob", mfa=True, object_type="asset",
                                                       attributes=ASSET, method="DELETE"), *QUESTIONS[4:]]  # fmt: skip
    batch = await sdk.check_access_batch(given, explain=True)
    assert all(isinstance(d, BatchDecision) for d in batch.decisions)
    assert [d.allowed for d in batch.decisions] == [True, False, False, True, True, False, False]
    dumped = batch.model_dump(mode="json")["decisions"]
    for i, q in enumerate(QUESTIONS):
        one = await sdk.check_access(**_single(q), explain=True)
        assert one.model_dump(mode="json") == dumped[i], q
        assert batch.decisions[i].revision == batch.revision == one.revision
    assert batch.decisions[4].roles == ("secure",) and batch.decisions[5].method == "GET"


async def test_a_bad_question_is_a_400_naming_it(sdk: PluginSDK) -> None:
    good = QUESTIONS[0]
    cases = [
        ({**good, "method": "PATCH"}, "questions[1].method"),
        ({**good, "usrId": "typo"}, "questions[1].usrId"),
        ({"objectType": "asset", "method": "GET"}, "questions[1]: name the subject"),
        ({**good, "objectType": "spaceship"}, "questions[1].object_type"),
    ]
    for bad, named in cases:
        with pytest.raises(ValidationError) as caught:
            await sdk.check_access_batch([good, bad])
        assert named in caught.value.message or caught.value.details["field"] == named, caught.value.message
        assert "typo" not in str(caught.value.to_envelope())  # an unknown field's value is never echoed
    with pytest.raises(ValidationError):
        await sdk.check_access_batch([])


async def test_the_rest_body_and_answer_keep_their_json(rest: httpx.AsyncClient) -> None:
    await rest.post("/roles", json={"roleName": "editor", "description": "edits"})
    constraint = project_constraint("edit-proj", {"editor": "GET"})
    made = await rest.post("/auth/constraints/edit-proj", json=constraint)
    assert made.status_code < 300, made.text
    assert (await rest.post("/user-roles", json={"userId": "alice", "roleName": ["editor"]})).status_code < 300
    questions = [
        {"userId": "alice", "objectType": "asset", "attributes": ASSET, "method": "GET"},
        {"roles": ["editor"], "objectType": "asset", "attributes": {"databaseId": "x"}},
    ]
    got = await rest.post("/auth/check/batch", json={"questions": questions, "explain": True})
    assert got.status_code == 200, got.text
    body = got.json()
    singles = [(await rest.post("/auth/check", json={"method": "GET", **q, "explain": True})).json() for q in questions]
    assert body["decisions"] == singles  # key for key, camelCase, userId absent for a roles-only subject
    assert list(body["decisions"][0]) == ["allowed", "objectType", "method", "userId", "roles", "mfa", "revision",
                                          "explanation"]  # fmt: skip
    assert "userId" not in body["decisions"][1] and body["decisions"][1]["method"] == "GET"
    assert body["decisions"][0]["explanation"]["allowedBy"][0]["constraintId"] == "edit-proj"
    plain = (await rest.post("/auth/check/batch", json={"questions": questions})).json()
    assert "explanation" not in plain["decisions"][0] and plain["revision"] == body["revision"]
    for wrong in ({"mfa": 0}, {"roles": "editor"}, {"attributes": []}):  # JSON types as the document states
        bad = await rest.post("/auth/check/batch", json={"questions": [{**questions[1], **wrong}]})
        assert bad.status_code == 400, (wrong, bad.text)
        assert bad.json()["error_code"] == "VALIDATION_ERROR"


async def test_identifiers_are_refused_as_a_single_check_refuses_them(sdk: PluginSDK) -> None:
    """A batch question's user id and role names follow the identifier rules of `check_access` (and its message)."""
    for bad, single in (
        ({"userId": "u1"}, {"user_id": "u1"}),
        ({"userId": "al ice"}, {"user_id": "al ice"}),
        ({"roles": [" lead"]}, {"roles": [" lead"]}),
        ({"roles": ["ok", "é"]}, {"roles": ["ok", "é"]}),
    ):
        with pytest.raises(ValidationError) as one:
            await sdk.check_access("asset", "GET", **single)
        with pytest.raises(ValidationError) as batch:
            await sdk.check_access_batch([QUESTIONS[0], {**bad, "objectType": "asset"}])
        assert one.value.details["expected"] in batch.value.message, (bad, batch.value.message)
        assert "questions[1]" in batch.value.message


async def test_answers_follow_the_policy_from_one_batch_to_the_next(sdk: PluginSDK) -> None:
    """Answers are kept per policy revision (equal answers shared): a policy write is seen by the next batch."""
    await _setup(sdk)
    ask = [{"userId": "alice", "objectType": "asset", "attributes": {"databaseId": f"proj-{i}"}, "method": "DELETE"}
           for i in range(3)]  # fmt: skip
    before = await sdk.check_access_batch(ask)
    assert [d.allowed for d in before.decisions] == [False, False, False]
    assert before.decisions[0] == before.decisions[2]
    again = await sdk.check_access_batch(ask)
    assert again.model_dump() == before.model_dump()
    written = await sdk.import_constraints_template(constraints=[project_constraint("del", {"editor": "DELETE"})])
    after = await sdk.check_access_batch(ask, at_least_revision=written.revision)
    assert [d.allowed for d in after.decisions] == [True, True, True]
    assert after.revision == written.revision > before.revision
    assert {d.revision for d in after.decisions} == {after.revision}


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec=None, exclude_categories=()), max_size=4)  # NUL and lone surrogates included
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(st.characters(exclude_categories=()), max_size=3), inner, max_size=3), max_leaves=8)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(attributes=st.dictionaries(st.text(st.characters(exclude_categories=()), max_size=3), _VALUES, max_size=3),
       object_type=st.sampled_from(["asset", "api", "as\x00set", "\ud800"]))  # fmt: skip
@example(attributes={"deep": _nested(30)}, object_type="asset")
@example(attributes={"deep": _nested(31)}, object_type="asset")
def test_a_check_refuses_exactly_what_cannot_be_stored(attributes: dict[str, Any], object_type: str) -> None:
    """The checks' own storable tests (`inputs_storable`, faster than the generic walk) agree with the generic
    `is_storable` on every input: one check and a batch refuse exactly the unstorable attributes and object types."""
    question = {"userId": "alice", "objectType": object_type, "attributes": attributes, "method": "GET"}
    held = {"user_id": "alice", "object_type": object_type, "attributes": attributes, "method": "GET"}
    cases = (  # each operation, and its input as the generic walk sees it (depths differ: a batch nests deeper)
        (lambda: CheckAccessQuery(**question), {**held, "mfa": False}),
        (lambda: CheckAccessBatchQuery(questions=[question]), {"questions": [held]}),
    )
    for build, walked in cases:
        storable = is_storable(walked)
        try:
            op = build()
        except pydantic.ValidationError as exc:
            assert not storable, exc  # refused (by the storable check, or pydantic for a lone surrogate) only if so
        else:
            assert storable and is_storable(op)


def test_the_storable_shortcuts_know_every_field() -> None:
    """`inputs_storable` of the check operations names the free-text fields; a new field must be added there."""
    assert set(CheckAccessQuery.model_fields) == {
        "object_type", "attributes", "method", "user_id", "roles", "mfa", "at_least_revision", "explain"}  # fmt: skip
    assert set(CheckAccessBatchQuery.model_fields) == {"questions", "explain", "allowed_only", "at_least_revision"}
    assert set(AccessQuestionData.__annotations__) == {
        "user_id", "roles", "mfa", "object_type", "attributes", "method"}  # fmt: skip


async def test_allowed_only_answers_the_same_decisions_alone(sdk: PluginSDK) -> None:
    await _setup(sdk)
    full = await sdk.check_access_batch(QUESTIONS)
    bare = await sdk.check_access_batch(QUESTIONS, allowed_only=True)
    assert bare.allowed == [d.allowed for d in full.decisions] == [True, False, False, True, True, False, False]
    assert bare.decisions == [] and bare.revision == full.revision
    assert full.allowed is None and "allowed" not in full.model_dump(mode="json", by_alias=True, exclude_none=True)
    with pytest.raises(ValidationError) as caught:
        await sdk.check_access_batch(QUESTIONS, allowed_only=True, explain=True)
    assert "allowed_only" in caught.value.message


async def test_allowed_only_over_rest_is_booleans_in_order(rest: httpx.AsyncClient) -> None:
    questions = [
        {"roles": ["admin"], "objectType": "asset", "attributes": ASSET},
        {"userId": "nobody", "objectType": "asset"},
    ]
    got = await rest.post("/auth/check/batch", json={"questions": questions, "allowedOnly": True})
    assert got.status_code == 200, got.text
    assert got.json() == {"decisions": [], "allowed": [True, False], "revision": got.json()["revision"]}
    full = (await rest.post("/auth/check/batch", json={"questions": questions})).json()
    assert "allowed" not in full and [d["allowed"] for d in full["decisions"]] == [True, False]
    both = await rest.post("/auth/check/batch", json={"questions": questions, "allowedOnly": True, "explain": True})
    assert both.status_code == 400 and both.json()["error_code"] == "VALIDATION_ERROR"


async def test_the_rest_answer_is_byte_for_byte_what_the_serializer_writes(rest: httpx.AsyncClient) -> None:
    """The batch's REST body is joined from each answer's kept JSON (`SubjectDecisions.to_json_bytes`): the same
    bytes as pydantic's serializer of the same answer, in every form, the first time and when the answers are
    reused by the next batch."""
    questions = [
        {"roles": ["admin"], "objectType": "asset", "attributes": {"databaseId": "é ☃"}},
        {"userId": "nobody", "objectType": "asset", "method": "DELETE"},
        {"userId": "nobody", "objectType": "asset", "method": "DELETE"},
    ]
    for options in ({}, {}, {"explain": True}, {"allowedOnly": True}):
        got = await rest.post("/auth/check/batch", json={"questions": questions, **options})
        assert got.status_code == 200, got.text
        answer = SubjectDecisions.model_validate_json(got.content)
        assert got.content == answer.__pydantic_serializer__.to_json(answer, by_alias=True), options


def test_written_json_is_the_serializers_for_every_answer_shape() -> None:
    explained = Explanation(allowed=False, revision=3, reasons=[Reason(kind="no-allow")])
    answers = [
        BatchDecision.of(True, "asset", "GET", user_id="u-1", roles=("r", "é"), mfa=True, revision=3),
        BatchDecision.of(False, "api", "PUT", user_id=None, roles=None, mfa=False, revision=3),
        BatchDecision(allowed=False, object_type="asset", method="GET", revision=3, explanation=explained),
    ]
    for result in (
        SubjectDecisions(decisions=answers, revision=3),
        SubjectDecisions(decisions=[answers[0]] * 3, revision=3),
        SubjectDecisions(decisions=[], revision=3),
        SubjectDecisions(allowed=[True, False], revision=3),
    ):
        for by_alias in (True, False, True):
            assert result.to_json_bytes(by_alias) == result.__pydantic_serializer__.to_json(result, by_alias=by_alias)


async def test_a_huge_or_malformed_batch_is_a_4xx_in_the_envelope(rest: httpx.AsyncClient) -> None:
    """The bounds hold over REST: more than 10,000 questions, a body that is not JSON, one nested too deep — each
    refused in the one error envelope before any decision (the body limit's 413: tests/server/test_door.py)."""
    question = {"roles": [], "objectType": "asset"}
    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    cases = [
        (b'{"questions": %s}' % httpx.Response(200, json=[question] * 10_001).content, 400),
        (b'{"questions": [{"roles": [], "objectType": "asset"}', 400),
        (b'{"questions": [{"roles": [], "objectType": "asset", "attributes": {"a": %s}}]}'
         % httpx.Response(200, json=deep).content, 400),
    ]  # fmt: skip
    for body, status in cases:
        got = await rest.post("/auth/check/batch", content=body, headers={"content-type": "application/json"})
        assert got.status_code == status, (status, got.text[:300])
        envelope = got.json()
        assert envelope["success"] is False and envelope["error_code"], envelope


def _limits_refuse(body: dict[str, Any]) -> bool:
    from pluginsdk.errors import ValidationError as Refused
    from pluginsdk.server._wire import check_limits

    try:
        check_limits(body)
    except Refused:
        return True
    return False


@settings(max_examples=300, deadline=None)
@given(attributes=st.dictionaries(st.text(max_size=3), _VALUES, max_size=3), depth=st.integers(0, 34))
@example(attributes={}, depth=28)  # the deepest the door takes: 32 levels from the body
@example(attributes={}, depth=29)
@example(attributes={"n": 1e400}, depth=0)
def test_a_batch_body_its_one_strict_pass_builds_is_within_the_door_limits(
    attributes: dict[str, Any], depth: int
) -> None:
    """The batch bounds its own input (`bounds_own_input`): a body the one strict pass builds passes the door's
    depth and finite-number walk, which the door then skips. A body the pass refuses is walked and refused as
    before (`test_a_batch_nested_past_the_limit_is_refused_as_any_body`)."""
    from pluginsdk.server._strict import strict_operation

    question = {"userId": "alice", "objectType": "asset", "attributes": {**attributes, "d": _nested(depth)}}
    body = {"questions": [question]}
    if strict_operation(CheckAccessBatchQuery.spec, body) is not None:
        assert not _limits_refuse(body)


async def test_a_batch_nested_past_the_limit_is_refused_as_any_body(rest: httpx.AsyncClient) -> None:
    """Over REST the batch's values nest up to the door's limit (32 levels from the body) and no deeper, and a
    number that overflows is refused: the same refusals, in the same words, as every body's."""
    from pluginsdk.files import MAX_DEPTH

    def body(attribute: bytes) -> bytes:
        return b'{"questions": [{"roles": [], "objectType": "asset", "attributes": {"a": %s}}]}' % attribute

    levels = MAX_DEPTH - 4  # the body, the questions, a question, its attributes
    headers = {"content-type": "application/json"}
    got = await rest.post("/auth/check/batch", content=body(b"[" * levels + b"]" * levels), headers=headers)
    assert got.status_code == 200, got.text[:300]
    for attribute, words in (
        (b"[" * (levels + 1) + b"]" * (levels + 1), f"nested deeper than {MAX_DEPTH} levels"),
        (b"1e400", "a number is out of range"),
        (b"[[1e400]]", "a number is out of range"),
    ):
        got = await rest.post("/auth/check/batch", content=body(attribute), headers=headers)
        assert got.status_code == 400 and got.json()["error"] == f"The request body is not valid JSON: {words}."
