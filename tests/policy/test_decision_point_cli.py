"""The decision point from the CLI's entry point: `auth explain` reads as a table, `auth test` fails loudly."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Result, cli_environment, invoke

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_environment(tmp_path)


def run(env: dict[str, str], *args: str) -> Result:
    return invoke(env, *args, fmt=None)


def test_explain_prints_readably(env: dict[str, str]) -> None:
    res = run(env, "auth", "explain", "template", "GET", "--roles", "basicReadOnly,ghost",
              "--attributes", "templateId=web", "--format", "table")  # fmt: skip
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0].split() == ["KIND", "CONSTRAINT_ID", "VIA", "DETAIL"]
    assert "ALLOW" in lines[1]
    assert "psdk-default-readonly-template" in lines[2] and "role:basicReadOnly" in lines[2]
    assert "role:ghost" in lines[3] and "does not exist" in lines[3]
    res = run(env, "auth", "explain", "template", "PUT", "--roles", "basicReadOnly", "--format", "table")
    assert "DENY" in res.out and "no allow constraint matched" in res.out


def test_policy_test_file_exit_codes(env: dict[str, str], tmp_path: Path) -> None:
    suite = EXAMPLES / "policy_tests.yaml"
    ok = run(env, "auth", "test", "-f", str(suite), "--format", "json")
    assert ok.code == 0, ok.out + ok.err
    bad = tmp_path / "bad.yaml"
    text = suite.read_text().replace("name: readers read templates", "name: flipped on purpose")
    head, _, tail = text.partition("name: flipped on purpose")
    bad.write_text(head + "name: flipped on purpose" + tail.replace("expect: allow", "expect: deny", 1))
    res = run(env, "auth", "test", "-f", str(bad), "--format", "json")
    assert res.code == 1
    assert "flipped on purpose: expected deny, got allow" in res.err


def test_plan_from_the_cli(env: dict[str, str]) -> None:
    """`auth plan` answers the JSON plan: the default read-only role reads every template, nobody else any."""
    import json

    res = run(env, "auth", "plan", "template", "GET", "--roles", "basicReadOnly", "--format", "json")
    assert res.code == 0, res.err
    plan = json.loads(res.out)
    assert plan["kind"] == "conditional" and plan["revision"] >= 1
    leaves = [(n["op"], n["field"], n["operator"], n["value"]) for n in plan["condition"]["operands"]]
    assert plan["condition"]["op"] == "or" and ("match", "templateId", "equals", "*") in leaves
    res = run(env, "auth", "plan", "template", "DELETE", "--roles", "basicReadOnly", "--format", "json")
    assert json.loads(res.out)["kind"] == "never"
