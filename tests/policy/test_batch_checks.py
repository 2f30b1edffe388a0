"""Batch checks held as plain data: the same answers and the same JSON as one check per question, on every
interface — mappings and `AccessQuestion` objects in, `BatchDecision`s out, a bad question named."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from pluginsdk import PluginSDK, ValidationError
from pluginsdk.models import AccessQuestion, BatchDecision
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
