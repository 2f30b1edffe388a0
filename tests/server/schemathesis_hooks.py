"""schemathesis hooks of tests/server/test_schemathesis.py: the run keeps its own key, stateful creates get fresh keys.

The run's own API keys. schemathesis feeds ids it saw in answers (the key listings) back into later cases, so
the fuzzing phase deleted or deactivated the very key it was sending, and every request after that, the whole
stateful phase included, was a 401 that tested nothing. A case that would delete or change one of the keys
the test gave the run (`PLUGINSDK_SCHEMATHESIS_KEYS`, their ids) is sent
instead to the last key the run created (a fair target), or to one that does not exist (404); every other key,
created by the run or not, is fair game. Likewise a case that would delete the user those keys act as
(`PLUGINSDK_SCHEMATHESIS_USERS`: deleting a managed user revokes its keys) goes to the last user the run created.
(Not always a missing id: schemathesis reuses ids it has sent, and a missing one after a create of its own
reads to it as "created resource not found".) And a case that would replace or delete that user's role
assignments (`PUT`/`DELETE /user-roles`) goes to a user that does not exist: once the run has made other
administrators, the lock-out guard rightly lets it demote the run's own user, and every later call is a 403.
The same for the default policy's constraints (`psdk-default-*`, ids the constraint listing shows): a case that
would delete or replace one goes to a constraint id that does not exist, so the administrator keeps the rights
the chains it walks need (without `psdk-default-admin-request`, every later machine request is a 403).

Fresh keys for stateful creates. The stateful phase runs its scenarios one after the other against one
server, and Hypothesis builds a new scenario by replaying the choices of an earlier one. A replayed create
sends the key it sent before (the same `template_id`, `role_name`, ...), meets the object the earlier
scenario made and answers 409 where it answered 2xx: no link can follow, the scenario draws less than its
prefix did, and Hypothesis ends the phase as "inconsistent data generation" after a few dozen scenarios,
whatever `max-examples` says. So just before a positive stateful create is sent, its key gets a suffix unique
to the run (`-7`), inside the key's length and character rules; what Hypothesis drew is unchanged, and the
chain that follows reads the key from the answer. Negative cases are sent exactly as generated.

Rules the document cannot state (`FIT`), applied to positive stateful cases only, so a walk is not cut short
by a refusal that says nothing about the link being walked (the other phases send what was generated):
- a constraint's criteria name fields of its `objectType` (the schema lists every type's fields), and it has
  at least one criterion;
- a self-service key expires within a year of now; a key update changes something;
- a body that repeats its path's id (`constraintId`, as the VAMS form does) repeats it exactly;
- an administrator's key acts as a user who holds a role (`administrator`), user-role writes give a role that
  exists (`admin`), in this configuration;
- a machine request asks for 1-3 machines: within the per-request limit (`max_machines_per_request`, 1000),
  and a hundred scenarios do not fill the local provider (1000 machines; beyond, it answers 502 capacity).
"""

from __future__ import annotations

import datetime
import itertools
import os
from typing import Any

import schemathesis
from pydantic.alias_generators import to_camel

from pluginsdk.models.auth_vocabulary import OBJECT_TYPES

KEYS: dict[str, tuple[str, str, int]] = {
    "POST /api/v1/templates": ("body", "template_id", 255),
    "POST /roles": ("body", "roleName", 64),
    "POST /auth/constraints/{constraint_id}": ("path_parameters", "constraint_id", 128),
    "POST /auth/api-keys": ("body", "apiKeyName", 128),
    "POST /auth/user/api-keys": ("body", "apiKeyName", 128),
    "POST /user/managed": ("body", "userId", 256),
    "POST /user/cognito": ("body", "userId", 256),
    "POST /user-roles": ("body", "userId", 256),
}
"""Create (operation label) -> where its client-chosen key is, its name and its maximum length."""

_KEY_PATHS = ("/auth/api-keys/{api_key_id}", "/auth/user/api-keys/{api_key_id}")
OWN_KEY_WRITES = {f"{method} {path}" for method in ("PUT", "DELETE") for path in _KEY_PATHS}
ABSENT_KEY_ID = "00000000-0000-4000-8000-000000000000"
OWN_USER_DELETES = {"DELETE /user/managed/{user_id}", "DELETE /user/cognito/{user_id}"}
OWN = (
    (OWN_KEY_WRITES, "PLUGINSDK_SCHEMATHESIS_KEYS", "api_key_id", "keys"),
    (OWN_USER_DELETES, "PLUGINSDK_SCHEMATHESIS_USERS", "user_id", "users"),
)
"""(operations, variable listing the run's own ids, path parameter, kind of what the run made instead)."""
OWN_ROLE_WRITES = {"PUT /user-roles", "DELETE /user-roles"}
ABSENT_USER_ID = "schemathesis-no-such-user"
DEFAULT_CONSTRAINT_WRITES = {f"{m} /auth/constraints/{{constraint_id}}" for m in ("POST", "PUT", "DELETE")}
ABSENT_CONSTRAINT_ID = "schemathesis-no-such-constraint"
MADE = {"POST /auth/api-keys": "keys", "POST /auth/user/api-keys": "keys", "POST /user/managed": "users"}
"""Creates whose 2xx answers give the ids the run made itself (`apiKeyId`, `userId`)."""

_SERIAL = itertools.count(1)
_DONE: set[str] = set()  # case ids already given their key (a check may send a case again)
_MADE: dict[str, list[str]] = {"keys": [], "users": []}


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    kind = MADE.get(case.operation.label)
    if kind is not None and 200 <= response.status_code < 300:
        made = response.json()
        value = made.get("apiKeyId" if kind == "keys" else "userId") if isinstance(made, dict) else None
        if isinstance(value, str):
            _MADE[kind].append(value)


@schemathesis.hook
def before_call(context: Any, case: Any, **kwargs: Any) -> None:
    label = case.operation.label
    for writes, variable, name, kind in OWN:
        own = set(filter(None, os.environ.get(variable, "").split(",")))
        if label in writes and (case.path_parameters or {}).get(name) in own:
            case.path_parameters[name] = _MADE[kind][-1] if _MADE[kind] else ABSENT_KEY_ID
    if label in DEFAULT_CONSTRAINT_WRITES and str((case.path_parameters or {}).get("constraint_id")).startswith(
        "psdk-default-"
    ):
        case.path_parameters["constraint_id"] = ABSENT_CONSTRAINT_ID
        if isinstance(case.body, dict) and "constraint_id" in case.body:
            case.body["constraint_id"] = ABSENT_CONSTRAINT_ID
    if label in OWN_ROLE_WRITES and isinstance(case.body, dict):
        own_users = set(filter(None, os.environ.get("PLUGINSDK_SCHEMATHESIS_USERS", "").split(",")))
        for name in ("user_id", "userId"):
            if isinstance(case.body.get(name), str) and case.body[name] in own_users:
                case.body[name] = ABSENT_USER_ID
    meta = case.meta
    if meta is None or meta.phase.name != "stateful" or meta.generation.mode != "positive":
        return
    if label in FIT:
        if not isinstance(case.body, dict):  # an update's optional body left out
            case.body = {}
        FIT[label](case.body)
    _fresh_key(case, label)
    if isinstance(case.body, dict):  # a body may repeat its path's id (VAMS), not contradict it
        for name, value in (case.path_parameters or {}).items():
            if to_camel(name) in case.body:
                case.body[to_camel(name)] = value


def _fresh_key(case: Any, label: str) -> None:
    """The create's client-chosen key with a suffix unique to the run (once per case)."""
    where = KEYS.get(label)
    if where is None:
        return
    container_name, name, max_length = where
    container = getattr(case, container_name)
    if case.id in _DONE or not isinstance(container, dict) or not isinstance(container.get(name), str):
        return
    _DONE.add(case.id)
    suffix = f"-{next(_SERIAL)}"
    container[name] = container[name][: max_length - len(suffix)] + suffix


def _constraint(body: dict[str, Any]) -> None:
    fields = OBJECT_TYPES.get(body.get("objectType", ""))
    if not fields:
        return
    for key in ("criteriaAnd", "criteriaOr"):
        for i, criterion in enumerate(body.get(key) or []):
            if isinstance(criterion, dict):
                criterion["field"] = fields[i % len(fields)]
    if not body.get("criteriaAnd") and not body.get("criteriaOr"):
        body["criteriaAnd"] = [{"field": fields[0], "operator": "equals", "value": "*"}]


def _within_a_year(body: dict[str, Any]) -> None:
    if "expiresAt" in body:
        body["expiresAt"] = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=30)).isoformat()


def _key_update(body: dict[str, Any]) -> None:
    if not body.keys() & {"description", "expiresAt", "isActive"}:
        body["description"] = "changed by schemathesis"
    if body.get("isActive") not in (None, "true", "false"):
        body["isActive"] = "true"
    if body.get("description") is None:
        body["description"] = "changed by schemathesis"


def _my_key_update(body: dict[str, Any]) -> None:
    _key_update(body)
    _within_a_year(body)


def _key_user(body: dict[str, Any]) -> None:
    body["userId"] = "administrator"


def _known_role(body: dict[str, Any]) -> None:
    body["roleName"] = ["admin"]


def _request_count(body: dict[str, Any]) -> None:
    count = body.get("requested_count")
    if isinstance(count, int | float) and not isinstance(count, bool):
        body["requested_count"] = 1 + int(count) % 3


FIT: dict[str, Any] = {
    "POST /auth/constraints/{constraint_id}": _constraint,
    "PUT /auth/constraints/{constraint_id}": _constraint,
    "POST /auth/user/api-keys": _within_a_year,
    "PUT /auth/user/api-keys/{api_key_id}": _my_key_update,
    "PUT /auth/api-keys/{api_key_id}": _key_update,
    "POST /auth/api-keys": _key_user,
    "POST /user-roles": _known_role,
    "PUT /user-roles": _known_role,
    "POST /api/v1/machines": _request_count,
    "POST /api/v1/machines/request": _request_count,
}
"""Operation label -> what makes its positive stateful body fit the rules above."""
