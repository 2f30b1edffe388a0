"""Work on request is bounded (docs/input.md, "Bounds on work"): a what-if larger than its documented maximum,
a candidate naming bad identifiers, a template whose variables expand past its bound, a constraint with too
many entries — each a 400 before the work, on both backends; and a large what-if that is allowed runs off the
event loop, so the server keeps answering meanwhile."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pluginsdk import PluginSDK, ValidationError
from pluginsdk.operations.constraints import IMPORT_MAX_TEXT
from pluginsdk.operations.policy_checks import WHAT_IF_MAX_DECISIONS
from pluginsdk.server import freeze_startup_heap
from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server

from .test_decision_point import perm


def _objects(n: int) -> list[dict[str, Any]]:
    return [{"objectType": "asset", "attributes": {"databaseId": f"db{i}"}} for i in range(n)]


def _grant(cid: str, roles: list[str], value: str = "db") -> dict[str, Any]:
    return {
        "constraintId": cid,
        "name": cid,
        "description": "assets for the roles",
        "objectType": "asset",
        "criteriaAnd": [{"field": "databaseId", "operator": "starts_with", "value": value}],
        "groupPermissions": [perm(r, "GET") for r in roles],
    }


async def test_a_what_if_past_its_bound_is_refused_naming_the_size(sdk: PluginSDK) -> None:
    users = {f"user{i:05d}": ["basicReadOnly"] for i in range(1300)}
    with pytest.raises(ValidationError, match=f"more than the {WHAT_IF_MAX_DECISIONS:,} allowed") as caught:
        await sdk.what_if(user_roles=users, objects=_objects(1000))
    size = caught.value.details["value"]
    assert isinstance(size, int) and size > WHAT_IF_MAX_DECISIONS
    assert f"{size:,} decisions" in caught.value.message
    # the same change over fewer users is compared, and what is kept stops at `limit` while the counts stay whole
    few = dict(list(users.items())[:50])
    report = await sdk.what_if(
        user_roles=few, objects=_objects(100), add_constraints=[_grant("all-db", ["basicReadOnly"])], limit=5
    )
    assert len(report.changes) == 5 and report.truncated
    # each new user gains its role's GET routes and the 100 objects: all counted, as one user's whole report says
    one = await sdk.what_if(
        user_roles=dict(list(users.items())[:1]),
        objects=_objects(100),
        add_constraints=[_grant("all-db", ["basicReadOnly"])],
    )
    assert not one.truncated and one.denied_to_allowed == len(one.changes) > 100
    assert report.denied_to_allowed == 50 * one.denied_to_allowed


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("user_roles", {"bad user!": ["basicReadOnly"]}),
        ("user_roles", {"alice": ["bad\\nrole"]}),
        ("user_roles", {"ａｄｍｉｎ": ["basicReadOnly"]}),
        ("role_mfa", {" admin": True}),
        ("delete_constraint_ids", ["bad id!"]),
    ],
)
async def test_candidate_identifiers_follow_the_identifier_rules(sdk: PluginSDK, field: str, value: Any) -> None:
    with pytest.raises(ValidationError):
        await sdk.what_if(**{field: value})
    with pytest.raises(ValidationError):
        await sdk.run_policy_tests(
            tests=[{"roles": ["admin"], "objectType": "asset", "method": "GET", "expect": "allow"}], **{field: value}
        )


async def test_a_candidate_names_a_bounded_number_of_users(sdk: PluginSDK) -> None:
    with pytest.raises(ValidationError):
        await sdk.what_if(user_roles={"alice": ["basicReadOnly"] * 201})


async def test_template_variables_expand_within_a_bound(sdk: PluginSDK) -> None:
    big = "x" * 100_000
    refs = "{{BIG}}" * (IMPORT_MAX_TEXT // len(big) + 1)
    constraint = {**_grant("bomb", ["basicReadOnly"]), "description": refs}
    with pytest.raises(ValidationError, match="too large once its variables are substituted"):
        await sdk.import_constraints_template(constraints=[constraint], variables={"BIG": big})
    with pytest.raises(ValidationError, match="too large once its variables are substituted"):
        await sdk.import_constraints_template(constraints=[constraint], variables={"BIG": big}, dry_run=True)
    assert not [c for c in (await sdk.list_constraints()).page_items() if c.constraint_id == "bomb"]


async def test_an_imported_constraint_has_bounded_entries(sdk: PluginSDK) -> None:
    crit = {"field": "databaseId", "operator": "equals", "value": "db1"}
    wide = {**_grant("wide", ["basicReadOnly"]), "criteriaAnd": [crit] * 101}
    with pytest.raises(ValidationError, match="at most 100"):
        await sdk.import_constraints_template(constraints=[wide])
    with pytest.raises(ValidationError, match="at most 100"):
        await sdk.what_if(add_constraints=[wide])


@pytest.fixture
def served_heap() -> Iterator[None]:
    """The heap a served process has: `pluginsdk server` freezes what it holds at start (`freeze_startup_heap`),
    so the collections a what-if sets off scan only what requests made. This server runs in the suite's
    process, whose heap holds every earlier test's objects; frozen the same way, a collection costs what it
    costs a server, not a pause that grows with the suite (unfrozen: /livez waited 1.17 s late in a CI run)."""
    freeze_startup_heap()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("served_heap")
async def test_a_large_what_if_leaves_the_server_answering(tmp_path: Path) -> None:
    roles = [f"team-{i:03d}" for i in range(250)]
    async with PluginSDK(config=base_config(tmp_path)) as local:  # set up in-process, on the served store
        for r in roles:
            await local.create_role(role_name=r, description="a team")
        await local.create_constraint(**_create_body(_grant("teams", roles, "db1")))
    config = base_config(tmp_path)
    key = await admin_key(config)
    with running_server(config) as url:
        async with PluginSDK(backend="remote", api_url=url, api_key=key) as sdk:
            report, took, worst, probes = await _what_if_while_probing(sdk, url, roles)
    assert report.truncated and report.questions >= 250 * 4000
    assert worst < 0.5, f"/livez waited {worst:.2f} s while a what-if ran ({took:.2f} s)"
    assert probes >= 3, f"/livez answered {probes} time(s) in the {took:.2f} s the what-if ran"


async def _what_if_while_probing(sdk: PluginSDK, url: str, roles: list[str]) -> tuple[Any, float, float, int]:
    """A what-if over 1,000 objects changing every role's grant, and /livez asked every 50 ms until it answers:
    (its report, its duration, the slowest /livez, how many were asked)."""
    started = time.perf_counter()
    task = asyncio.create_task(sdk.what_if(objects=_objects(1000), add_constraints=[_grant("teams", roles)], limit=10))
    worst = 0.0
    probes = 0
    async with httpx.AsyncClient() as client:
        while not task.done():
            t = time.perf_counter()
            assert (await client.get(f"{url}/livez")).status_code == 200
            worst = max(worst, time.perf_counter() - t)
            probes += 1
            await asyncio.sleep(0.05)
    report = await task
    return report, time.perf_counter() - started, worst, probes


def _create_body(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "constraint_id": c["constraintId"],
        "name": c["name"],
        "description": c["description"],
        "object_type": c["objectType"],
        "criteria_and": c["criteriaAnd"],
        "group_permissions": c["groupPermissions"],
    }


async def test_batches_and_test_suites_are_bounded(sdk: PluginSDK) -> None:
    question = {"roles": [], "objectType": "asset", "method": "GET"}
    with pytest.raises(ValidationError):
        await sdk.check_access_batch([question] * 10_001)
    with pytest.raises(ValidationError):
        await sdk.run_policy_tests(tests=[{**question, "expect": "deny"}] * 10_001)
    report = await sdk.run_policy_tests(tests=[{**question, "expect": "deny"}] * 10_000)  # the bound itself runs
    assert report.passed and report.total == 10_000
