"""What a user following the docs meets at the command line: exit codes that say what happened, tables that keep
the key columns, options that take what their help promises, challenges answered in one command."""

from __future__ import annotations

import re
from typing import Any

import pytest
from click.testing import CliRunner

from pluginsdk.cli import cli as cli_group
from pluginsdk.operations import CATALOG
from tests.cli.test_cli_edges import managed, provider, template
from tests.support.cli import PLUGINSDK, ok
from tests.support.cli import invoke as cli


def test_status_of_several_ids_with_unknown_ones_exits_1_and_names_them(env: dict[str, str]) -> None:
    template(env)
    req = ok(env, "machines", "request", "web", "1", "--wait")
    both = cli(env, "requests", "status", req["request_id"], "req-unknown-1")
    assert both.code == 1 and "req-unknown-1" in both.err
    assert [r["request_id"] for r in both.json()["requests"]] == [req["request_id"]]
    assert both.json()["not_found"] == ["req-unknown-1"]
    table = cli(env, "requests", "status", "req-unknown-1", "req-unknown-2", fmt="table")
    assert table.code == 1 and "req-unknown-1, req-unknown-2" in table.err  # a table says it on stderr
    one = cli(env, "requests", "status", "req-unknown-1")
    assert one.code == 1 and one.json()["error_code"] == "REQUEST_NOT_FOUND"
    machine = req["machines"][0]["machine_id"]
    machines = cli(env, "machines", "status", machine, "i-unknown")
    assert machines.code == 1 and "i-unknown" in machines.err
    assert ok(env, "requests", "status", req["request_id"])["requests"][0]["request_id"] == req["request_id"]


def test_auth_check_exits_3_on_deny_with_the_same_json(env: dict[str, str]) -> None:
    attrs = ("--attributes", "databaseId=db1")
    denied = cli(env, "auth", "check", "asset", "GET", "--user-id", "nobody", *attrs)
    allowed = cli(env, "auth", "check", "asset", "GET", "--user-id", "administrator", *attrs)
    assert denied.code == 3 and denied.json()["allowed"] is False
    assert allowed.code == 0 and allowed.json()["allowed"] is True
    assert set(denied.json()) == set(allowed.json())
    assert cli(env, "auth", "explain", "asset", "GET", "--user-id", "nobody", *attrs).code == 3
    assert cli(env, "auth", "is-allowed", "asset", "GET", *attrs).code == 0  # in-process: the administrator


def test_what_if_user_roles_take_key_value_as_help_says(env: dict[str, str]) -> None:
    one = ok(env, "auth", "what-if", "--user-roles", "dave=basicReadOnly", "--user-ids", "dave")
    assert one["changes"] and {c["subject"] for c in one["changes"]} == {"user:dave"}
    two = ok(env, "auth", "what-if", "--user-roles", "dave=basicReadOnly,dave=admin", "--user-ids", "dave")
    assert two["denied_to_allowed"] > one["denied_to_allowed"]  # admin on top of basicReadOnly flips more
    as_json = ok(env, "auth", "what-if", "--user-roles", '{"dave": ["basicReadOnly"]}', "--user-ids", "dave")
    assert as_json["denied_to_allowed"] == one["denied_to_allowed"]


def test_auth_login_answers_the_new_password_challenge_from_stdin(env: dict[str, str]) -> None:
    env = managed(env)
    temp = ok(env, "users", "create", "ann", "ann@example.com")["temporary_password"]
    unanswered = ok(env, "auth", "login", "ann", stdin=temp + "\n")
    assert unanswered["challenge_name"] == "NEW_PASSWORD_REQUIRED" and "--new-password" in unanswered["message"]
    signed_in = ok(env, "auth", "login", "ann", stdin=f"{temp}\nFresh-Passw0rd-42\n")
    assert signed_in.get("challenge_name") is None and signed_in["access_token"]
    assert ok(env, "auth", "login", "ann", "--password", "Fresh-Passw0rd-42")["access_token"]


def test_help_shows_no_docstring_indentation() -> None:
    runner = CliRunner()
    for spec in CATALOG.values():
        assert spec.cli is not None
        text = runner.invoke(cli_group, [spec.cli.group, spec.cli.action, "--help"]).output
        description = text.split("Options:")[0].split("Arguments:")[0]
        assert not re.search(r"\S {2,}\S", description), (spec.name, description)
    what_if = runner.invoke(cli_group, ["auth", "what-if", "--help"]).output
    assert "user permissions" in " ".join(what_if.split()) and "user     permissions" not in what_if


def _columns(text: str) -> list[str]:
    return text.splitlines()[0].split()


def test_tables_keep_the_key_columns(env: dict[str, str]) -> None:
    ok(env, "api-keys", "create", "k1", "administrator", "--description", "a key", "--expires-at", "2030-01-01")
    keys = cli(env, "api-keys", "list", fmt="table").out
    assert {"EXPIRES_AT", "IS_ACTIVE"} <= set(_columns(keys))
    key_id = ok(env, "api-keys", "list")["items"][0]["api_key_id"]
    ok(env, "api-keys", "update", key_id, "--is-active", "false")
    audit = cli(env, "auth", "audit", fmt="table").out
    assert "CHANGE" in _columns(audit) and "created" in audit and "is_active: 1 -> 0" in audit
    constraints = cli(env, "constraints", "list", fmt="table").out
    assert "PERMISSIONS" in _columns(constraints) and "role:admin allow GET, PUT, POST, DELETE" in constraints
    provider(env, failure_rate=1.0)
    template(env)
    cli(env, "machines", "request", "web", "1", "--wait")
    machines = cli(env, "machines", "list", fmt="table").out
    assert "STATUS_REASON" in _columns(machines) and "failed" in machines


def test_machines_return_from_request_in_one_step(env: dict[str, str]) -> None:
    template(env)
    req = ok(env, "machines", "request", "web", "2", "--wait")
    mixed_up = cli(env, "machines", "return", "--request-id", req["request_id"])
    assert mixed_up.code == 1 and "from_request_id" in mixed_up.json()["error"]
    ret: Any = ok(env, "machines", "return", "--from-request-id", req["request_id"])
    assert sorted(ret["processed_machines"]) == sorted(m["machine_id"] for m in req["machines"])


@pytest.mark.parametrize("command", [("templates", "create"), ("machines", "return")])
def test_help_names_what_the_confusable_fields_mean(command: tuple[str, str]) -> None:
    text = " ".join(CliRunner().invoke(cli_group, [*command, "--help"]).output.split())
    expected = "local provider" if command[0] == "templates" else "not the provisioning request"
    assert expected in text, text


def test_auth_login_with_the_password_given_never_waits_on_stdin(env: dict[str, str]) -> None:
    """`--password` on the command line and stdin an open pipe (a CI runner): the challenge is printed at once."""
    import subprocess
    import time

    env = managed(env)
    temp = ok(env, "users", "create", "ann", "ann@example.com")["temporary_password"]
    proc = subprocess.Popen(
        [PLUGINSDK, "--format", "json", "auth", "login", "ann", "--password", temp],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    try:  # stdin stays open: a command reading it would never end
        deadline = time.monotonic() + 60
        while proc.poll() is None:
            assert time.monotonic() < deadline, "auth login waited on stdin"
            time.sleep(0.05)
        assert proc.stdout is not None
        out = proc.stdout.read()
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0 and "--new-password" in out, out
