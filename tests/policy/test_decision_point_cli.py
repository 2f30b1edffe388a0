"""The decision point from the real CLI (subprocess): `auth explain` reads as a table, `auth test` fails loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PLUGIN_")}
    return {**base, "PLUGIN_STORAGE_PATH": str(tmp_path / "cli.db")}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pluginsdk", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_explain_prints_readably(env: dict[str, str]) -> None:
    res = run(env, "auth", "explain", "template", "GET", "--roles", "basicReadOnly,ghost",
              "--attributes", "templateId=web", "--format", "table")  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["KIND", "CONSTRAINT_ID", "VIA", "DETAIL"]
    assert "ALLOW" in lines[1]
    assert "psdk-default-readonly-template" in lines[2] and "role:basicReadOnly" in lines[2]
    assert "role:ghost" in lines[3] and "does not exist" in lines[3]
    res = run(env, "auth", "explain", "template", "PUT", "--roles", "basicReadOnly", "--format", "table")
    assert "DENY" in res.stdout and "no allow constraint matched" in res.stdout


def test_policy_test_file_exit_codes(env: dict[str, str], tmp_path: Path) -> None:
    suite = EXAMPLES / "policy_tests.yaml"
    ok = run(env, "auth", "test", "-f", str(suite), "--format", "json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "bad.yaml"
    text = suite.read_text().replace("name: readers read templates", "name: flipped on purpose")
    head, _, tail = text.partition("name: flipped on purpose")
    bad.write_text(head + "name: flipped on purpose" + tail.replace("expect: allow", "expect: deny", 1))
    res = run(env, "auth", "test", "-f", str(bad), "--format", "json")
    assert res.returncode == 1
    assert "flipped on purpose: expected deny, got allow" in res.stderr


def test_plan_from_the_cli(env: dict[str, str]) -> None:
    """`auth plan` answers the JSON plan: the default read-only role reads every template, nobody else any."""
    import json

    res = run(env, "auth", "plan", "template", "GET", "--roles", "basicReadOnly", "--format", "json")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert plan["kind"] == "conditional" and plan["revision"] >= 1
    leaves = [(n["op"], n["field"], n["operator"], n["value"]) for n in plan["condition"]["operands"]]
    assert plan["condition"]["op"] == "or" and ("match", "templateId", "equals", "*") in leaves
    res = run(env, "auth", "plan", "template", "DELETE", "--roles", "basicReadOnly", "--format", "json")
    assert json.loads(res.stdout)["kind"] == "never"
