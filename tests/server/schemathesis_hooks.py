"""schemathesis hooks of tests/server/test_schemathesis.py: the run keeps its own key, stateful creates get fresh keys.

The run's own API keys. schemathesis feeds ids it saw in answers (the key listings) back into later cases, so
the fuzzing phase deleted or deactivated the very key it was sending, and every request after that, the whole
stateful phase included, was a 401 that tested nothing. A case that would delete or change one of the keys
the test gave the run (`PLUGINSDK_SCHEMATHESIS_KEYS`, their ids) is sent to an id that does not exist instead
(404); every other key, created by the run or not, is fair game.

Fresh keys for stateful creates. The stateful phase runs its scenarios one after the other against one
server, and Hypothesis builds a new scenario by replaying the choices of an earlier one. A replayed create
sends the key it sent before (the same `template_id`, `role_name`, ...), meets the object the earlier
scenario made and answers 409 where it answered 2xx: no link can follow, the scenario draws less than its
prefix did, and Hypothesis ends the phase as "inconsistent data generation" after a few dozen scenarios,
whatever `max-examples` says. So just before a positive stateful create is sent, its key gets a suffix unique
to the run (`-7`), inside the key's length and character rules; what Hypothesis drew is unchanged, and the
chain that follows reads the key from the answer. Negative cases are sent exactly as generated.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import schemathesis

KEYS: dict[str, tuple[str, str, int]] = {
    "POST /api/v1/templates": ("body", "template_id", 255),
    "POST /roles": ("body", "role_name", 64),
    "POST /auth/constraints/{constraint_id}": ("path_parameters", "constraint_id", 128),
    "POST /auth/api-keys": ("body", "api_key_name", 128),
    "POST /auth/user/api-keys": ("body", "api_key_name", 128),
    "POST /user/managed": ("body", "user_id", 256),
    "POST /user/cognito": ("body", "user_id", 256),
    "POST /user-roles": ("body", "user_id", 256),
}
"""Create (operation label) -> where its client-chosen key is, its name and its maximum length."""

_KEY_PATHS = ("/auth/api-keys/{api_key_id}", "/auth/user/api-keys/{api_key_id}")
OWN_KEY_WRITES = {f"{method} {path}" for method in ("PUT", "DELETE") for path in _KEY_PATHS}
ABSENT_KEY_ID = "00000000-0000-4000-8000-000000000000"

_SERIAL = itertools.count(1)
_DONE: set[str] = set()  # case ids already given their key (a check may send a case again)


@schemathesis.hook
def before_call(context: Any, case: Any, **kwargs: Any) -> None:
    label = case.operation.label
    if label in OWN_KEY_WRITES:
        own = set(filter(None, os.environ.get("PLUGINSDK_SCHEMATHESIS_KEYS", "").split(",")))
        if (case.path_parameters or {}).get("api_key_id") in own:
            case.path_parameters["api_key_id"] = ABSENT_KEY_ID
        return
    meta = case.meta
    where = KEYS.get(label)
    if where is None or meta is None or meta.phase.name != "stateful" or meta.generation.mode != "positive":
        return
    container_name, name, max_length = where
    container = getattr(case, container_name)
    if case.id in _DONE or not isinstance(container, dict) or not isinstance(container.get(name), str):
        return
    _DONE.add(case.id)
    suffix = f"-{next(_SERIAL)}"
    container[name] = container[name][: max_length - len(suffix)] + suffix
