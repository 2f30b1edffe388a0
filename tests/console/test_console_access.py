"""The console's access and template-administration pages in a real browser: roles, user roles, managed users,
template edit, validate and import, the audit export; as an administrator (by keyboard where it matters) and as
a read-only caller (no write action shown, a forged one refused 403). Screenshots: see conftest.SHOTS."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.console.conftest import Site, confirm, shot, sign_in_with_key
from tests.console.test_console import HOSTILE, _csrf, _watch_errors

SHOWN = HOSTILE.replace("\u202e", "<U+202E>").replace("\u202c", "<U+202C>")
NEW_PAGES = (
    "/ui/roles",
    "/ui/roles/admin",
    "/ui/user-roles",
    "/ui/users",
    "/ui/api-keys",
    "/ui/templates/base",
    "/ui/template-import",
)


def _done(page: Any) -> str:
    return str(page.locator("[role=status]").first.text_content())


def test_roles_created_by_keyboard_edited_assigned_unassigned_and_deleted(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/roles")
    # keyboard: the skip link, then the first control in main; the create form is reached by Tab alone
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.locator("#f-role_name").focus()
    page.keyboard.type("auditors")
    page.keyboard.press("Tab")
    page.keyboard.type(HOSTILE)
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # MFA required
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Create role"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/ui/roles\?done="))
    assert _done(page) == "Created role auditors."
    row = page.locator("tr", has_text="auditors")
    assert row.locator("td").nth(1).text_content() == SHOWN and row.locator("td").nth(2).text_content() == "yes"
    assert page.locator("script").count() == 1
    shot(page, "admin-roles")
    row.get_by_role("link", name="Edit").click()
    page.wait_for_url(f"{site.url}/ui/roles/auditors")
    page.fill("#f-description", "reads the audit log")
    page.uncheck("input[name=mfa_required]")
    shot(page, "admin-role-edit")
    page.get_by_role("button", name="Save role").click()
    page.wait_for_url(re.compile(r".*/ui/roles\?done="))
    row = page.locator("tr", has_text="auditors")
    assert row.locator("td").nth(1).text_content() == "reads the audit log"
    assert row.locator("td").nth(2).text_content() == "no"

    page.goto(f"{site.url}/ui/user-roles")
    page.fill("#f-user_id", "viewer")
    page.select_option("#f-role_name", "auditors")
    page.get_by_role("button", name="Assign role").click()
    page.wait_for_url(re.compile(r".*/ui/user-roles\?done="))
    held = page.locator("tr", has_text="viewer").first.locator("td").nth(1).text_content()
    assert "auditors" in held and "viewer" in held
    shot(page, "admin-user-roles")
    page.get_by_role("button", name="Unassign auditors from viewer").click()
    confirm(page, "Unassign role")
    page.wait_for_url(re.compile(r".*/ui/user-roles\?done="))
    held = page.locator("tr", has_text="viewer").first.locator("td").nth(1).text_content()
    assert "auditors" not in held and "viewer" in held  # the other role stays
    page.goto(f"{site.url}/ui/roles/auditors")
    assert "Held by: nobody" in page.locator("main").text_content()

    page.goto(f"{site.url}/ui/roles")
    page.get_by_role("button", name="Delete role auditors").click()
    confirm(page, "Delete role", "confirm-delete-role")
    page.wait_for_url(re.compile(r".*/ui/roles\?done="))
    assert page.locator("td", has_text="auditors").count() == 0
    assert errors == []


def test_managed_users_created_password_reset_and_mfa_cleared(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/users")
    guarded = page.locator("tr", has_text="guarded")
    assert guarded.locator("td").nth(4).text_content() == "enrolled"
    page.fill("#f-user_id", "newcomer")
    page.fill("#f-email", "newcomer@example.com")
    page.get_by_role("button", name="Create user").click()
    assert "temporary password was mailed" in _done(page)
    assert page.locator("tr", has_text="newcomer").locator("td").nth(2).text_content() == "FORCE_CHANGE_PASSWORD"
    shot(page, "admin-users")
    page.get_by_role("button", name="Reset password of newcomer").click()
    confirm(page, "Reset password")
    assert "Reset the password of newcomer" in _done(page)
    page.get_by_role("button", name="Reset MFA of guarded").click()
    confirm(page, "Reset MFA")
    page.wait_for_url(re.compile(r".*/ui/users\?done="))
    assert page.locator("tr", has_text="guarded").locator("td").nth(4).text_content() == "none"
    assert page.get_by_role("button", name="Reset MFA of guarded").count() == 0
    assert errors == []


def test_an_administrator_issues_a_key_for_a_user_deactivates_and_deletes_it(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/api-keys")
    page.fill("#f-for_user", "viewer")
    page.fill("#f-api_key_name", "handed-over")
    page.fill("#f-description", HOSTILE)
    page.get_by_role("button", name="Issue key").click()
    secret = str(page.locator("#secret").text_content())
    assert secret.startswith("psdk_")
    row = page.locator("tr", has_text="handed-over")
    assert row.locator("td").nth(1).text_content() == "viewer" and row.locator("td").nth(2).text_content() == SHOWN
    shot(page, "admin-api-keys")
    page.goto(f"{site.url}/ui/api-keys?user_id=viewer")
    assert secret not in page.content() and page.locator("td", has_text="console-admin").count() == 0

    def works() -> int:
        return int(page.request.get(f"{site.url}/api/v1/templates", headers={"authorization": secret}).status)

    assert works() == 200
    page.get_by_role("button", name="Deactivate key handed-over").click()
    confirm(page, "Deactivate key")
    page.wait_for_url(re.compile(r".*/ui/api-keys\?done="))
    assert page.locator("tr", has_text="handed-over").locator("td").nth(3).text_content() == "no"
    assert works() == 401
    page.get_by_role("button", name="Activate key handed-over").click()
    page.wait_for_url(re.compile(r".*/ui/api-keys\?done="))
    assert works() == 200
    page.get_by_role("button", name="Delete key handed-over").click()
    confirm(page, "Delete key")
    page.wait_for_url(re.compile(r".*/ui/api-keys\?done="))
    assert page.locator("td", has_text="handed-over").count() == 0 and works() == 401
    assert errors == []


def test_template_edit_validate_import_and_delete(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/template-import")
    entries = [
        {"templateId": "imported-1", "imageId": "img-i", "name": HOSTILE, "maxNumber": 3},
        {"template_id": "imported-2"},  # no image: refused, the others still imported
        {"template_id": "imported-3", "image_id": "img-i"},
    ]
    page.fill("#f-templates", json.dumps(entries))
    page.get_by_role("button", name="Validate").click()
    outcome = page.locator("section[role=status] tbody tr")
    verdicts = [outcome.nth(i).locator("td").nth(1).text_content() for i in range(3)]
    assert verdicts[0] == verdicts[2] == "valid" and verdicts[1] != "valid", verdicts
    page.goto(f"{site.url}/ui/templates?offset=0")
    assert page.locator("td", has_text="imported-1").count() == 0  # validating stored nothing
    page.goto(f"{site.url}/ui/template-import")
    page.fill("#f-templates", json.dumps(entries))
    page.get_by_role("button", name="Import templates").click()
    results = [r.locator("td").nth(1).text_content() for r in page.locator("section[role=status] tbody tr").all()]
    assert results[0] == "created" and results[1].startswith("refused (400)") and results[2] == "created"
    shot(page, "admin-template-import")

    page.goto(f"{site.url}/ui/templates")
    page.get_by_role("link", name="imported-1", exact=True).click()
    page.wait_for_url(f"{site.url}/ui/templates/imported-1")
    assert page.input_value("#f-name") == HOSTILE  # a value, not markup
    page.fill("#f-max_number", "7")
    page.fill("#f-tags", '{"team": "<b>ops</b>"}')
    page.get_by_role("button", name="Validate").click()
    assert "Validation: valid" in page.locator("#valid-h").text_content()
    assert page.input_value("#f-max_number") == "7"  # the form keeps what was typed
    shot(page, "admin-template-edit")
    page.get_by_role("button", name="Save template").click()
    page.wait_for_url(re.compile(r".*/ui/templates/imported-1\?done="))
    assert page.input_value("#f-max_number") == "7" and page.input_value("#f-tags") == '{"team": "<b>ops</b>"}'
    assert page.locator("main b").count() == 0
    page.get_by_role("button", name="Delete template").click()
    confirm(page, "Delete template", "confirm-delete-template")
    page.wait_for_url(re.compile(r".*/ui/templates\?done="))
    assert page.get_by_role("link", name="imported-1", exact=True).count() == 0
    assert errors == []


def test_audit_export_streams_the_filtered_records_as_json_lines(site: Site, page: Any) -> None:
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/audit?action=create_role")
    link = page.get_by_role("link", name="Export these records as JSON lines")
    with page.expect_download() as download:
        link.click()
    lines = download.value.path().read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert records and {r["action"] for r in records} == {"create_role"}
    assert any(r["target_id"] == "viewer" for r in records)
    answer = page.request.get(f"{site.url}{link.get_attribute('href')}")
    assert answer.headers["content-type"] == "application/x-ndjson"
    assert "attachment" in answer.headers["content-disposition"]
    everything = page.request.get(f"{site.url}/ui/audit/export").text().splitlines()
    assert len(everything) > len(lines)
    shot(page, "admin-audit-filtered")


def test_read_only_caller_sees_no_write_action_on_the_access_pages_and_forgeries_are_403(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.viewer_key)
    nav = page.locator("header nav").text_content()
    assert "Roles" in nav and "User roles" in nav and "Users" in nav
    for path in NEW_PAGES:
        response = page.goto(f"{site.url}{path}")
        assert response.status == 200, path
        assert page.locator("main form[method=post]").count() == 0, path
        shot(page, "viewer" + path.replace("/", "-"))
    token = _csrf(page)
    page.goto(f"{site.url}/ui/keys")  # the viewer's own key: its id in the first column
    key_id = str(page.locator("tbody tr td").first.text_content())
    forged = {
        "/ui/roles": {"role_name": "forged", "description": "forged role"},
        "/ui/roles/admin": {"description": "taken over"},
        "/ui/roles/admin/delete": {},
        "/ui/user-roles": {"user_id": "viewer", "role_name": "admin"},
        "/ui/user-roles/unassign": {"user_id": "operator", "role_name": "admin"},
        "/ui/users": {"user_id": "forged", "email": "forged@example.com"},
        "/ui/users/operator/reset-password": {},
        "/ui/users/guarded/reset-mfa": {},
        "/ui/templates/base": {"image_id": "forged", "action": "save"},
        "/ui/templates/base/delete": {},
        "/ui/template-import": {"templates": '[{"template_id": "forged", "image_id": "i"}]', "action": "import"},
        "/ui/template-import/refresh": {},
        "/ui/api-keys": {"for_user": "viewer", "api_key_name": "forged", "description": "forged key"},
        f"/ui/api-keys/{key_id}/deactivate": {},
        f"/ui/api-keys/{key_id}/delete": {},
    }
    refused = {
        path: page.request.post(f"{site.url}{path}", form={"csrf": token, **data}) for path, data in forged.items()
    }
    assert {p: r.status for p, r in refused.items()} == dict.fromkeys(forged, 403)
    page.goto(f"{site.url}/ui/templates")
    assert "forged" not in page.locator("main").text_content()
    assert page.locator("tr", has_text="img-base").count() == 1
    page.goto(f"{site.url}/ui/user-roles")
    assert "admin" not in page.locator("tr", has_text="viewer").first.text_content()
    assert errors == []
