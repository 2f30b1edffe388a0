"""Template changes made in the console are in the audit log with the signed-in caller, as from any interface, and
the console's export returns them (no browser needed: the console's forms over HTTP)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx

from tests.support.backends import base_config
from tests.support.remote import admin_key, running_server


def test_console_template_changes_reach_the_audit_log(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    key = asyncio.run(admin_key(config))
    with running_server(config) as url, httpx.Client(base_url=url) as client:
        form = client.get("/ui/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert token
        signed_in = client.post("/ui/login", data={"csrf": token.group(1), "api_key": key, "next": "/ui/"})
        assert signed_in.status_code == 303
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/templates").text)
        assert csrf
        made = client.post("/ui/templates", data={"csrf": csrf.group(1), "template_id": "ui-web", "image_id": "ami-1"})
        assert made.status_code in (200, 303), made.text[:500]
        saved = client.post("/ui/templates/ui-web", data={"csrf": csrf.group(1), "action": "save", "image_id": "ami-2"})
        assert saved.status_code in (200, 303), saved.text[:500]
        asked = client.post("/ui/templates/ui-web/delete", data={"csrf": csrf.group(1)})  # the confirmation page
        assert asked.status_code == 200 and 'name="confirm" value="yes"' in asked.text, asked.text[:500]
        gone = client.post("/ui/templates/ui-web/delete", data={"csrf": csrf.group(1), "confirm": "yes"})
        assert gone.status_code in (200, 303), gone.text[:500]
        export = client.get("/ui/audit/export", params={"target_type": "template", "target_id": "ui-web"})
        assert export.status_code == 200, export.text[:500]
    records = [json.loads(line) for line in export.text.splitlines() if line.strip()]
    assert [r["action"] for r in records] == ["create_template", "update_template", "delete_template"]
    assert {r["actor"] for r in records} == {"administrator"}
    assert records[2]["before"]["image_id"] == "ami-2" and records[2]["after"] is None
