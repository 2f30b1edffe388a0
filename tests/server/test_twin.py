"""The door against its twin: the same requests through the REST door and a stock Starlette routing of the
same catalog (`twin.py`), in process, each on its own copy of one seeded store, compared byte for byte.

Compared: the status, the headers a client acts on (`Content-Type`, `Allow`, `Retry-After`) and the body,
with only what must differ normalised (request ids, which are not compared, and timestamps). The requests
cover each route shape (path, query and body parameters, a whole-body field, camelCase auth routes, public
routes), missing and invalid credentials, 403 before 400, 404, 405 with `Allow`, `OPTIONS`, the limits,
malformed and non-JSON bodies, wrong JSON types and unknown fields. `DIVERGENCES` are the requests where the
door answers as docs/rest.md says and Starlette's own routing would answer otherwise.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest

from pluginsdk import PluginSDK
from pluginsdk.backend import load_backend
from pluginsdk.config import load_settings
from pluginsdk.server import create_app
from tests.auth.conftest import CHEAP_HASHING
from tests.server.door import reader_key
from tests.server.twin import twin_app
from tests.support.backends import base_config
from tests.support.remote import admin_key

MAX_BODY = 1 << 20
_TIME = re.compile(rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"')
_COMPARED = ("content-type", "allow", "retry-after")


class Case(NamedTuple):
    method: str
    target: str
    who: str = "admin"
    """admin, reader (only basicReadOnly), none (no header), or an Authorization value."""
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    chunked: bool = False
    """The body sent in chunks, without a declared length."""


def j(text: str) -> bytes:
    return text.encode()


def _chunks(body: bytes) -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        for at in range(0, len(body), 65536):
            yield body[at : at + 65536]

    return gen()


CASES: list[Case] = [
    # path and query parameters, snake_case and camelCase, lists repeated or comma-separated
    Case("GET", "/api/v1/templates"),
    Case("GET", "/api/v1/templates?limit=1&offset=0"),
    Case("GET", "/api/v1/templates?limit=abc"),
    Case("GET", "/api/v1/templates?limit=-1"),
    Case("GET", "/api/v1/templates?limit=1&limit=2&unknown=x"),
    Case("GET", "/api/v1/templates/web"),
    Case("GET", "/api/v1/templates/web?includeConfig=true"),
    Case("GET", "/api/v1/templates/web?include_config=maybe"),
    Case("GET", "/api/v1/templates/nope"),
    Case("GET", "/api/v1/templates/a%20b"),
    Case("GET", "/api/v1/templates/%C3%A9t%C3%A9"),
    Case("GET", "/api/v1/templates?provider_name=%C3%A9&limit=%FF"),
    Case("GET", "/api/v1/templates/web?provider_name=&include_config="),
    Case("GET", "/api/v1/requests/status?request_ids=req-a,req-b&request_ids=req-c"),
    Case("GET", "/api/v1/requests/status?requestIds=req-x&reportMissing=true"),
    Case("GET", "/api/v1/requests/status"),
    Case("GET", "/api/v1/requests/req-nope"),
    Case("GET", "/api/v1/requests/req-nope/status?long=false"),
    Case("GET", "/api/v1/requests?limit=0"),
    Case("GET", "/api/v1/machines/status?machine_ids="),
    Case("GET", "/api/v1/machines?active_only=yes&limit=3"),
    Case("DELETE", "/api/v1/requests/req-nope?reason=test&force=true"),
    Case("GET", "/api/v1/config?group=api"),
    Case("GET", "/health"),
    # public routes
    Case("GET", "/api/version", who="none"),
    Case("GET", "/api/amplify-config", who="none"),
    Case("POST", "/auth/login", who="none", body=j('{"username":"nobody","password":"wrong-password"}')),
    Case("POST", "/auth/login", who="none", body=j('{"username":"nobody"}')),
    Case("POST", "/auth/token", who="none", body=j("{}")),
    Case("POST", "/auth/token", who="none", body=j('{"refreshToken":"garbage"}')),
    *[Case("POST", "/auth/login", who="none", body=j('{"username":"nobody","password":"wrong"}'))] * 3,
    # credentials
    Case("GET", "/api/v1/templates", who="none"),
    Case("GET", "/api/v1/templates", who="psdk_not-a-key"),
    Case("GET", "/api/v1/templates", who="Bearer not.a.jwt"),
    Case("GET", "/roles", who="Basic dXNlcjpwYXNz"),
    Case("POST", "/api/v1/templates", who="none", body=j("{not json")),
    Case("GET", "/api/v1/templates", who="reader"),
    # 403 before 400: a body, or path and query input, of a route the caller may not call
    Case("POST", "/api/v1/templates", who="reader", body=j('{"templateId": 5}')),
    Case("POST", "/api/v1/templates", who="reader", body=j("{not json")),
    Case("POST", "/api/v1/templates", who="reader", body=j('{"templateId":"r1","imageId":"ami-1"}')),
    Case("DELETE", "/api/v1/templates/web?force=maybe", who="reader"),
    Case("DELETE", "/api/v1/templates/web", who="reader"),
    Case("GET", "/auth/api-keys?pageSize=abc", who="reader"),
    Case("POST", "/roles", who="reader", body=j('{"roleName": 1}')),
    # bodies: well formed, malformed, mistyped, unknown fields, non-JSON content
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t2","imageId":"ami-1","description":"é ✓"}')),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t2","imageId":"ami-1"}')),
    Case("POST", "/api/v1/templates", body=j('{"template_id":"t3","image_id":"ami-1","validate_only":true}')),
    Case("GET", "/api/v1/templates/t3"),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t4","imageId":"ami-1","bogus":1}')),
    Case("POST", "/api/v1/templates", body=j('{"templateId":5,"imageId":"ami-1"}')),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t4","imageId":"ami-1","maxNumber":"5"}')),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t4","imageId":"ami-1","subnetIds":"subnet-1"}')),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t4","imageId":"ami-1","maxNumber":1e999}')),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t4","imageId":"ami-1","maxNumber":NaN}')),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"\\ud800","imageId":"ami-1"}')),
    Case("POST", "/api/v1/templates", body=b'{"templateId":"\xff","imageId":"ami-1"}'),
    Case("POST", "/api/v1/templates", body=b"[" * 40 + b"]" * 40),
    Case("POST", "/api/v1/templates", body=j("[]")),
    Case("POST", "/api/v1/templates", body=j("null")),
    Case("POST", "/api/v1/templates", body=j("{not json")),
    Case("POST", "/api/v1/templates", body=b""),
    Case("POST", "/api/v1/templates", body=b" \r\n "),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t5","imageId":"ami-1"} trailing')),
    Case(
        "POST",
        "/api/v1/templates",
        body=j('{"templateId":"t6","imageId":"ami-1"}'),
        headers=(("content-type", "text/plain"),),
    ),
    Case(
        "POST",
        "/api/v1/templates",
        body=j("templateId=t7"),
        headers=(("content-type", "application/x-www-form-urlencoded"),),
    ),
    Case("PUT", "/api/v1/templates/web", body=j('{"description":"updated"}')),
    Case("PUT", "/api/v1/templates/web", body=j('{"templateId":"other","description":"x"}')),
    Case("PUT", "/api/v1/templates/web", body=j('{"templateId":"web","description":"same id"}')),
    Case("PUT", "/api/v1/templates/nope", body=j('{"description":"x"}')),
    Case("POST", "/api/v1/requests/req-nope/sync", body=j("ignored: this route takes no body")),
    # a whole-body field, with its query parameter
    Case("POST", "/api/v1/templates/validate?template_id=web", body=j('{"image_id":"ami-1"}')),
    Case("POST", "/api/v1/templates/validate", body=j("[]")),
    Case("POST", "/api/v1/templates/validate", body=j('"text"')),
    # machine requests: listing A and listing B, dry runs (nothing stored), refusals
    Case("POST", "/api/v1/machines", body=j('{"templateId":"web","machineCount":1,"dryRun":true}')),
    Case("POST", "/api/v1/machines/request", body=j('{"template_id":"web","count":1,"dry_run":true}')),
    Case("POST", "/api/v1/machines/request", body=j('{"template_id":"nope","count":1}')),
    Case("POST", "/api/v1/machines", body=j('{"templateId":"web","machineCount":0}')),
    Case("POST", "/api/v1/machines", body=j('{"templateId":"web","machineCount":true}')),
    Case("POST", "/api/v1/machines/return", body=j('{"machineIds":[],"dryRun":true}')),
    # camelCase auth routes: `message` in the envelope, camelCase answers
    Case("GET", "/roles"),
    Case("POST", "/roles", body=j('{"roleName":"twin-role","description":"a role of the twin test"}')),
    Case("POST", "/roles", body=j('{"roleName":"twin-role","description":"a role of the twin test"}')),
    Case("POST", "/roles", body=j('{"role_name":"r2","description":"a role","bogus":1}')),
    Case("PUT", "/roles", body=j('{"roleName":"twin-role","description":"another description","mfaRequired":1}')),
    Case("DELETE", "/roles/no-such-role"),
    Case("GET", "/user-roles"),
    Case("GET", "/auth/api-keys?pageSize=abc"),
    Case("GET", "/auth/api-keys/no-such-key"),
    Case("PUT", "/auth/api-keys/no-such-key", body=j('{"apiKeyName":"renamed"}')),
    Case("POST", "/auth/check", body=j('{"roles":["admin"],"objectType":"api","method":"GET","attributes":{}}')),
    Case("POST", "/auth/check", body=j('{"roles":["admin"],"mfa":0,"objectType":"api","method":"GET"}')),
    Case("POST", "/auth/check/batch", body=j('{"questions":[{"userId":"reader","objectType":"api","method":"GET"}]}')),
    Case("POST", "/auth/constraints/c-twin", body=j('{"constraintId":"c-other","name":"n"}')),
    Case("GET", "/auth/constraints/no-such-constraint"),
    Case("GET", "/auth/routes/api/allowed", who="reader"),
    # routing: 404, 405 with Allow, OPTIONS, HEAD, a body the route does not take
    Case("GET", "/nope"),
    Case("POST", "/nope", body=j("{}")),
    Case("GET", "/api/v1"),
    Case("DELETE", "/api/v1/templates"),
    Case("PATCH", "/api/v1/templates/web"),
    Case("HEAD", "/api/v1/templates"),
    Case("POST", "/health"),
    Case("OPTIONS", "/api/v1/templates/web"),
    Case("OPTIONS", "/auth/api-keys"),
    Case("OPTIONS", "/nope"),
    Case("OPTIONS", "/api/v1/requests/status"),
    Case("GET", "/api/v1/templates", body=j('{"ignored": true}')),
    # limits: before routing and authentication
    Case("GET", "/api/v1/templates?x=" + "a" * 9000),
    Case("GET", "/api/v1/templates", headers=(("x-big", "a" * 9000),)),
    Case("GET", "/api/v1/templates", headers=tuple((f"x-h{i}", "v") for i in range(120))),
    Case("POST", "/api/v1/templates", who="none", body=b" " * (MAX_BODY + 1)),
    Case("POST", "/nope", body=b" " * (MAX_BODY + 1)),
    Case("POST", "/api/v1/templates", who="none", body=b" " * (MAX_BODY + 1), chunked=True),
    Case("POST", "/api/v1/templates", body=j('{"templateId":"t8","imageId":"ami-1"}'), chunked=True),
    # last: a change of the reader's roles, then the reader again
    Case("DELETE", "/user-roles", body=j('{"userId":"reader"}')),
    Case("GET", "/api/v1/templates", who="reader"),
]


class Divergence(NamedTuple):
    case: Case
    door: int
    twin: int
    why: str


DIVERGENCES = [
    Divergence(
        Case("GET", "/api/v1/templates/refresh"),
        405,
        404,
        "docs/rest.md: a path belongs to its most specific template, `/templates/refresh` (POST only); "
        "Starlette takes the first template that serves the method, `/templates/{template_id}`",
    ),
    Divergence(
        Case("DELETE", "/api/v1/requests/status"),
        405,
        404,
        "the same rule: the status listing, not a request called `status`",
    ),
    Divergence(
        Case("GET", "/api/v1/templates/"),
        404,
        307,
        "no route has a trailing slash and the door does not redirect (docs/rest.md); Starlette redirects "
        "to the path without it",
    ),
]


class Answer(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes


@asynccontextmanager
async def _apps(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient, dict[str, str]]]:
    """The door and the twin, each on its own copy of one seeded store; the seeded keys."""
    managed = {"enabled": True, "passwordHashing": CHEAP_HASHING, "signInLimits": {"clientFailures": 2}}
    config = base_config(tmp_path, app={"authProvider": {"useManaged": managed}})
    keys = {"admin": await admin_key(config), "reader": await reader_key(config)}
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1")
    store = Path(config["storage"]["path"])
    clients = []
    async with AsyncExitStack() as stack:
        for name, build in (("door", create_app), ("twin", twin_app)):
            copy = tmp_path / f"{name}.db"
            shutil.copyfile(store, copy)
            shutil.copyfile(store.with_name(store.name + ".key"), copy.with_name(copy.name + ".key"))
            settings = load_settings(config={**config, "storage": {"path": str(copy)}}, environ={})
            backend: Any = load_backend("local", settings)
            await backend.start()
            stack.push_async_callback(backend.aclose)
            app: Any = build(backend) if name == "twin" else build(backend, max_body_bytes=MAX_BODY)
            transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
            clients.append(await stack.enter_async_context(httpx.AsyncClient(transport=transport, base_url="http://t")))
        yield clients[0], clients[1], keys


async def _send(client: httpx.AsyncClient, case: Case, keys: dict[str, str]) -> Answer:
    headers = dict(case.headers)
    if case.who != "none":
        headers["authorization"] = keys.get(case.who, case.who)
    content: Any = _chunks(case.body) if case.chunked and case.body is not None else case.body
    r = await client.request(case.method, case.target, headers=headers, content=content)
    return Answer(
        r.status_code, {k: r.headers[k] for k in _COMPARED if k in r.headers}, _TIME.sub(b'"<time>"', r.content)
    )


async def test_the_door_answers_as_its_starlette_twin(tmp_path: Path) -> None:
    async with _apps(tmp_path) as (door, twin, keys):
        differ = []
        for case in CASES:
            ours, theirs = await _send(door, case, keys), await _send(twin, case, keys)
            if ours != theirs:
                differ.append((case.method, case.target[:80], case.who, ours, theirs))
    assert not differ, "\n".join(map(repr, differ))


@pytest.mark.parametrize("divergence", DIVERGENCES, ids=[d.case.target for d in DIVERGENCES])
async def test_where_the_door_differs_from_starlette_on_purpose(tmp_path: Path, divergence: Divergence) -> None:
    async with _apps(tmp_path) as (door, twin, keys):
        ours, theirs = await _send(door, divergence.case, keys), await _send(twin, divergence.case, keys)
    assert (ours.status, theirs.status) == (divergence.door, divergence.twin), divergence.why
