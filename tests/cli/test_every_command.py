"""Every catalog command, run through the CLI's entry point: JSON parsed, exit code checked.

One store carries the state from command to command (a template, a request, its machines, a role, a
user, an API key). Commands that need a signed-in password session are run too and must fail with the
error envelope and exit 1 (the user made here has no password: no mail server is configured).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pluginsdk._index import GROUPS
from tests.support.cli import FAST, cli_environment, invoke


class Cli:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.ran: set[tuple[str, str]] = set()

    def __call__(self, *args: str, ok: bool = True, code: str | None = None, denied: bool = False) -> Any:
        """`denied`: a decision command answering deny, which exits 3 with its usual JSON (docs/cli.md)."""
        res = invoke(self.env, *args)
        assert res.code == (3 if denied else 0) if ok else res.code != 0, (args, res.out, res.err)
        out = res.json()
        if not ok:
            assert res.code == 1 and out["success"] is False and out["error"], out
            assert code is None or out["error_code"] == code, out
            assert out["error"] in res.err
        self.ran.add((args[0], args[1]))
        return out


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    managed = (
        "app:\n  authProvider:\n    useManaged:\n      enabled: true\n"
        "      passwordHashing: {timeCost: 1, memoryKib: 8, parallelism: 1}\n"
    )
    return Cli(cli_environment(tmp_path, FAST + managed))


def test_every_command(cli: Cli, tmp_path: Path) -> None:
    # templates
    tpl = tmp_path / "t.json"
    tpl.write_text(json.dumps({"templateId": "web", "imageId": "ami-1", "instanceType": "t3.small"}))
    assert cli("templates", "validate", "--file", str(tpl))["valid"] is True
    assert cli("templates", "create", "--file", str(tpl))["template_id"] == "web"
    cli("templates", "create", "--file", str(tpl), ok=False, code="ALREADY_EXISTS")
    assert cli("templates", "update", "web", "--name", "Web tier")["template_id"] == "web"
    assert cli("templates", "show", "web")["template"]["name"] == "Web tier"
    assert cli("templates", "list")["total_count"] == 1
    assert "template_count" in cli("templates", "refresh")
    cli("templates", "create", "--template-id", "tmp", "--image-id", "ami-2")
    assert cli("templates", "delete", "tmp")["template_id"] == "tmp"
    cli("templates", "show", "tmp", ok=False, code="TEMPLATE_NOT_FOUND")

    # machines and requests
    req = cli("machines", "request", "web", "2", "--wait", "--timeout", "60")
    rid, ids = req["request_id"], [m["machine_id"] for m in req["machines"]]
    assert req["status"] == "completed" and len(ids) == 2
    assert cli("machines", "list")["total_count"] == 2
    assert cli("machines", "show", ids[0])["status"] == "running"
    assert {m["machine_id"] for m in cli("machines", "status", *ids)["machines"]} == set(ids)
    assert cli("machines", "health", ids[0])["healthy"] is True
    assert cli("machines", "count")["count"] == 2
    assert cli("machines", "ready", ids[0])["machine_id"] == ids[0]  # a startup script's readiness signal
    assert cli("requests", "show", rid)["status"] == "completed"
    assert cli("requests", "status", rid)["requests"][0]["request_id"] == rid
    assert cli("requests", "list", "--status", "completed")["total_count"] == 1
    assert cli("requests", "active")["total_count"] == 0
    assert cli("requests", "summary")["by_status"] == {"completed": 1}
    assert cli("requests", "sync", rid)["request_id"] == rid
    assert cli("requests", "populate-machines", rid)["request_id"] == rid
    cli("requests", "complete", rid, ok=False)  # already finished: a state conflict, not a silent success
    cli("requests", "set-status", rid, "running", ok=False)  # terminal statuses move nowhere
    slow = cli("--dry-run", "machines", "request", "web", "1")
    assert slow["dry_run"] is True
    slow_cfg = tmp_path / "slow.yaml"  # machines that take a minute to boot, so the request is still running
    slow_cfg.write_text(Path(cli.env["PLUGIN_CONFIG"]).read_text().replace("boot_delay: 0.05", "boot_delay: 60"))
    other = cli("--config", str(slow_cfg), "machines", "request", "web", "1")["request_id"]
    cancelled = cli("requests", "cancel", other, "--reason", "not needed", "--force")
    assert cancelled["status"] == "cancelled"
    ret = cli("machines", "return", *ids)
    assert ret["request_id"].startswith("ret-") and ret["processed_machines"] == ids
    assert cli("requests", "returns")["total_count"] == 1
    assert cli("requests", "cleanup", "--older-than-days", "0", "--dry-run")["requests_cleaned"] == 0
    assert "machines_cleaned" in cli("machines", "cleanup", "--older-than-days", "30")
    assert "total_cleaned" in cli("system", "cleanup", "--older-than-days", "30")

    # system
    assert cli("system", "status")["scheduler"] == "default"
    assert cli("system", "health")["healthy"] is True
    assert "counters" in cli("system", "metrics")
    assert cli("system", "config")["configuration"]["storage"]["type"] == "sqlite"
    assert any(p["name"] == "local" for p in cli("providers", "list")["providers"])
    status = cli("providers", "status")
    assert status["offerings"] == [] and status["providers"][0]["name"] == "local"

    # auth: roles, users, user roles, API keys, routes
    cli("roles", "create", "ops", "--description", "Operators")
    assert any(r["role_name"] == "ops" for r in cli("roles", "list")["message"]["items"])
    cli("roles", "update", "ops", "--description", "Operators team")
    assert cli("users", "create", "bob", "bob@example.com")["user"]["user_id"] == "bob"
    assert any(u["user_id"] == "bob" for u in cli("users", "list")["users"])
    cli("users", "update", "bob", "--phone", "+15551234567")
    cli("users", "reset-password", "bob", ok=False)  # no mail server to send the new password
    assert cli("users", "reset-mfa", "bob")["operation"] == "resetMfa"
    cli("user-roles", "create", "bob", "ops")
    cli("user-roles", "replace", "bob", "ops")
    assert any(u["user_id"] == "bob" for u in cli("user-roles", "list")["message"]["items"])
    expires = (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    key_id = cli("api-keys", "create-mine", "ci", "--description", "CI pipeline", "--expires-at", expires)["api_key_id"]
    assert key_id in json.dumps(cli("api-keys", "list-mine"))
    cli("api-keys", "show-mine", key_id)
    cli("api-keys", "update-mine", key_id, "--description", "CI pipeline two")
    cli("api-keys", "delete-mine", key_id)
    bob_key_id = cli("api-keys", "create", "bobs", "bob", "--description", "Bob's key")["api_key_id"]
    assert bob_key_id in json.dumps(cli("api-keys", "list"))
    cli("api-keys", "show", bob_key_id)
    cli("api-keys", "update", bob_key_id, "--description", "Bob's other key")
    cli("api-keys", "delete", bob_key_id)
    assert cli("routes", "api")["routes"]
    assert cli("routes", "allowed")["routes"]
    cli("routes", "check-web", "--data", json.dumps({"routes": [{"route__path": "/templates", "method": "GET"}]}))
    assert cli("auth", "is-allowed", "template", "GET", "--attributes", "templateId=web")["allowed"] is True
    assert cli("auth", "is-allowed", "template", "GET", denied=True)["allowed"] is False  # `*` needs a value
    assert cli("auth", "filter-allowed", "template", "--data", '{"objects": [{"templateId": "web"}]}')["indexes"] == [0]
    assert cli("auth", "version")["version"]
    cli("auth", "secure-config")
    cli("auth", "amplify-config")
    assert "keys" in cli("auth", "jwks")
    assert cli("auth", "profile", "administrator")["user_id"] == "administrator"
    cli("auth", "profile-update", "administrator", "--data", '{"user_id": "administrator"}')
    cli("auth", "profile", "bob", ok=False, code="FORBIDDEN")  # only its own user reads a profile
    # constraints
    body = tmp_path / "c.json"
    body.write_text(json.dumps({
        "name": "ops read web", "description": "ops may read the web template", "objectType": "template",
        "criteriaAnd": [{"field": "templateId", "operator": "equals", "value": "web"}],
        "groupPermissions": [{"groupId": "ops", "permission": "GET", "permissionType": "allow"}],
    }))  # fmt: skip
    assert cli("constraints", "create", "c1", "--file", str(body))["operation"] == "create"
    cli("constraints", "create", "c1", "--file", str(body), ok=False, code="ALREADY_EXISTS")
    assert cli("constraints", "show", "c1")["object_type"] == "template"
    cli("constraints", "show", "c10", ok=False, code="NOT_FOUND")
    assert cli("constraints", "update", "c1", "--file", str(body), "--name", "renamed")["operation"] == "update"
    assert cli("constraints", "show", "c1")["name"] == "renamed"
    page = cli("constraints", "list", "--page-size", "2")["message"]
    assert len(page["items"]) == 2 and page["next_token"]
    assert any(t["value"] == "template" for t in cli("constraints", "permission-objects")["message"]["object_types"])
    tmpl = {"variables": {"T": "web"}, "constraints": [{**json.loads(body.read_text()), "constraintId": "t-{{T}}"}]}
    assert cli("constraints", "import", "--data", json.dumps(tmpl))["constraint_ids"] == ["t-web"]
    assert cli("constraints", "delete", "c1")["operation"] == "delete"
    cli("user-roles", "delete", "bob")
    cli("roles", "delete", "ops")
    cli("users", "delete", "bob")
    # sign-in commands: bob has no password, and this process has no session
    cli("auth", "login", "bob", "--password", "Not-the-password-1", ok=False)
    cli("auth", "refresh", "--refresh-token", "not-a-token", ok=False)
    cli("auth", "logout", ok=False)
    # federated sign-in: no identity provider is configured here (tests/auth/federation/test_oidc_sign_in.py signs in)
    assert cli("auth", "sso-options")["federation"] is None
    cli("auth", "sso-start", "--redirect-uri", "http://127.0.0.1:9/callback", ok=False, code="VALIDATION_ERROR")
    cli("auth", "sso-finish", "--state", "s" * 43, "--code", "c", ok=False, code="VALIDATION_ERROR")
    cli("auth", "saml-metadata", ok=False, code="VALIDATION_ERROR")
    cli("auth", "change-password", "--previous-password", "a-b-c-d-e-1", "--proposed-password", "Z-y-x-w-v-2", ok=False)
    cli("auth", "mfa-setup", ok=False)
    cli("auth", "mfa-verify", "123456", ok=False)
    cli("auth", "mfa-disable", ok=False, code="FORBIDDEN")

    # the decision point
    assert cli("auth", "check", "template", "GET", "--roles", "admin", "--attributes", "templateId=web")["allowed"]
    batch = {"questions": [{"roles": [], "objectType": "template", "method": "GET"}]}
    assert cli("auth", "check-batch", "--data", json.dumps(batch))["decisions"][0]["allowed"] is False
    assert (
        cli("auth", "explain", "template", "PUT", "--roles", "basicReadOnly", denied=True)["no_allow_matched"] is True
    )
    assert "admin" in cli("auth", "who-can", "template", "PUT", "--attributes", "templateId=web")["allowed_roles"]
    assert cli("auth", "routes-of", "--roles", "admin")["routes"]
    assert cli("auth", "plan", "template", "DELETE", "--roles", "basicReadOnly")["kind"] == "never"
    change = {"deleteConstraintIds": ["psdk-default-readonly-template"],
              "objects": [{"objectType": "template", "attributes": {"templateId": "web"}}]}  # fmt: skip
    assert cli("auth", "what-if", "--data", json.dumps(change))["allowed_to_denied"] >= 1
    suite = Path(__file__).resolve().parents[2] / "examples" / "policy_tests.yaml"
    assert cli("auth", "test", "--file", str(suite))["passed"] is True
    assert cli("auth", "audit", "--action", "delete_constraint")["records"][0]["target_id"] == "c1"
    web = json.dumps({"field": "templateId", "operator": "starts_with", "value": "web"})
    granted = cli("auth", "grant", "basicReadOnly", "template", "--methods", "GET", "--criteria-and", web)
    assert granted["routes"] == ["GET /api/v1/templates/web*"]

    every = {(g, a) for g, actions in GROUPS.items() for a in actions}
    assert every - cli.ran == set()
