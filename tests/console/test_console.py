"""The console in a real browser: sign-in, every page for an administrator and a read-only caller, the main
provisioning and policy workflows, escaping, CSRF and keyboard use. Screenshots: see conftest.SHOTS."""

from __future__ import annotations

import re
from typing import Any

import pyotp

from tests.console.conftest import PASSWORD, Site, confirm, shot, sign_in_with_key

PAGES = ("/ui/", "/ui/templates", "/ui/requests", "/ui/machines", "/ui/constraints", "/ui/keys", "/ui/audit", "/ui/ops")
HOSTILE = '<script>alert("x")</script> "quoted" \'single\' \u202eevil\u202c'


def _csrf(page: Any) -> str:
    token = page.locator("form.signout input[name=csrf]").get_attribute("value")
    assert token
    return str(token)


def _watch_errors(page: Any) -> list[str]:
    """Console errors (a CSP violation, a script error) and dialogs the page opened."""
    seen: list[str] = []
    page.on("console", lambda m: seen.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.append(str(e)))
    page.on("dialog", lambda d: (seen.append(f"dialog: {d.message}"), d.dismiss()))
    return seen


def test_password_sign_in_by_keyboard_every_page_and_sign_out_ends_the_session(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    page.goto(f"{site.url}/ui/")
    assert page.url.startswith(f"{site.url}/ui/login")
    shot(page, "sign-in")
    page.keyboard.press("Tab")  # the skip link
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "username"
    page.keyboard.type(site.operator)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{site.url}/ui/")
    assert page.locator("form.signout span").text_content() == site.operator
    # keyboard through the main navigation: skip link, Dashboard, Templates
    for _ in range(3):
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Templates"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{site.url}/ui/templates")
    # and create a template by keyboard alone: the skip link, then the form's fields in order, Enter submits
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    for _ in range(20):  # past the import link and each template's link
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "f-template_id":
            break
    assert page.evaluate("document.activeElement.id") == "f-template_id"
    for text in ("by-keyboard", "Made by keyboard", "img-k"):
        page.keyboard.type(text)
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/ui/templates\?done="))
    assert page.locator("td", has_text="Made by keyboard").count() == 1
    for path in (*PAGES, "/ui/playground", "/ui/ops/list_templates"):
        response = page.goto(f"{site.url}{path}")
        assert response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert page.locator("h1").count() == 1
        shot(page, "admin" + (path.replace("/", "-").rstrip("-") or "-dashboard"))
    page.goto(f"{site.url}/ui/constraints")
    assert page.locator("form[action='/ui/constraints'] button[value=save]").count() == 1
    cookies = page.context.cookies()
    session = next(c for c in cookies if c["name"] == "pluginsdk_console")
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""
    page.click("form.signout button")
    page.wait_for_url(re.compile(r".*/ui/login$"))
    # the old cookie no longer opens a session: it ended server-side
    page.context.add_cookies([session])
    page.goto(f"{site.url}/ui/templates")
    assert "/ui/login" in page.url
    assert errors == []


def test_wrong_password_is_refused_without_saying_which_part(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/ui/login")
    page.fill("#username", site.operator)
    page.fill("#password", "not-the-password")
    page.click("button[type=submit]")
    assert "Sign-in failed" in page.locator("[role=alert]").text_content()
    assert "/ui/login" in page.url


def test_password_and_totp_sign_in(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/ui/login")
    page.fill("#username", "guarded")
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    assert page.locator("[role=alert]").text_content() == "Enter the code from your authenticator app."
    assert "/ui/login" in page.url
    page.fill("#password", PASSWORD)
    page.fill("#totp", pyotp.TOTP(site.totp_secret).now())
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{site.url}/ui/")
    assert page.locator("form.signout span").text_content() == "guarded"


def test_read_only_caller_sees_no_write_action_and_a_forged_one_is_403(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.viewer_key)
    for path in PAGES:
        response = page.goto(f"{site.url}{path}")
        assert response.status == 200, path
        writes = page.locator("main form[method=post]")
        assert writes.count() == 0, (path, writes.first.get_attribute("action"))
        shot(page, "viewer" + (path.replace("/", "-").rstrip("-") or "-dashboard"))
    nav = page.locator("header nav").text_content()
    assert "Playground" not in nav  # explain is a POST route the viewer may not call
    token = _csrf(page)
    forged = page.request.post(
        f"{site.url}/ui/templates", form={"csrf": token, "template_id": "forged", "image_id": "img", "max_number": "1"}
    )
    assert forged.status == 403
    assert (
        page.request.post(f"{site.url}/ui/ops/delete_template", form={"csrf": token, "template_id": "x"}).status == 403
    )
    page.goto(f"{site.url}/ui/templates")
    assert "forged" not in page.locator("main").text_content()
    assert errors == []


def test_create_template_request_machines_and_watch_them_come_up(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/templates")
    page.fill("#f-template_id", "web")
    page.fill("#f-name", HOSTILE)
    page.fill("#f-image_id", "img-1")
    page.get_by_role("button", name="Create template").click()
    page.wait_for_url(re.compile(r".*/ui/templates\?done="))
    assert page.locator("[role=status]").text_content() == "Created template web."
    cell = page.locator("td", has_text="quoted")
    assert cell.text_content() == HOSTILE.replace("\u202e", "<U+202E>").replace("\u202c", "<U+202C>")
    assert page.locator("script").count() == 1  # the console's own, nothing injected
    shot(page, "template-created")
    page.get_by_role("link", name="web", exact=True).click()  # the template's page offers the request form
    page.wait_for_url(f"{site.url}/ui/templates/web")
    assert page.input_value("#f-template_id") == "web"
    page.fill("#f-requested_count", "2")
    page.get_by_role("button", name="Request machines").click()
    page.wait_for_url(re.compile(r".*/ui/requests/req-"))
    # the progress section updates in place (server-sent events), no reload
    marker = page.evaluate("window.__kept = 1")
    assert marker == 1
    page.locator("#progress [data-final]").wait_for(timeout=10000)
    assert page.evaluate("window.__kept") == 1
    assert page.locator("#progress .state").text_content() == "completed"
    machines = page.locator("#progress table", has=page.locator("caption", has_text="Machines"))
    assert machines.locator("td", has_text="running").count() == 2
    fields = page.locator("#progress table", has=page.locator("caption", has_text="Fields"))
    assert fields.locator("tr", has_text="template_id").locator("td").nth(1).text_content() != ""
    shot(page, "request-progress")
    page.goto(f"{site.url}/ui/machines")
    boxes = page.locator("input[name=machine_ids]")
    assert boxes.count() == 2
    boxes.first.check()
    page.get_by_role("button", name="Return selected").click()
    confirm(page, "Return machines", "confirm-return")
    page.wait_for_url(re.compile(r".*/ui/machines\?done="))
    assert "Return requested" in page.locator("[role=status]").text_content()
    assert errors == []


def test_constraint_preview_save_and_the_playground_decision_changes(site: Site, page: Any) -> None:
    sign_in_with_key(page, site.url, site.admin_key)

    def decision() -> str:
        page.goto(f"{site.url}/ui/playground")
        page.fill("#f-user_id", "viewer")
        page.fill("#f-attributes", "route__path=/api/v1/templates")
        page.get_by_role("button", name="Explain").click()
        return str(page.locator(".decision").text_content())

    assert decision() == "ALLOW"
    page.goto(f"{site.url}/ui/constraints")
    # the field suggestions follow the object type (permissionObjects)
    suggested = "els => els.map(e => e.value)"
    assert page.locator("#field-names option").evaluate_all(suggested) == ["route__path"]
    page.select_option("#f-object_type", "template")
    assert "templateId" in page.locator("#field-names option").evaluate_all(suggested)
    page.select_option("#f-object_type", "api")
    page.fill("#f-constraint_id", "viewer-no-templates")
    page.fill("#f-name", "viewer may not list templates")
    page.fill("#f-value", "/api/v1/templates")
    page.fill("#f-role", "viewer")
    page.check("input[name=kind][value=deny]")
    page.click("button[value=preview]")
    preview = page.locator(".preview")
    assert "Nothing is saved yet" in preview.text_content()
    assert preview.locator("td", has_text="role:viewer").count() >= 1
    shot(page, "constraint-what-if")
    assert decision() == "ALLOW"  # the preview saved nothing
    page.goto(f"{site.url}/ui/constraints")
    page.fill("#f-constraint_id", "viewer-no-templates")
    page.fill("#f-name", "viewer may not list templates")
    page.fill("#f-value", "/api/v1/templates")
    page.fill("#f-role", "viewer")
    page.check("input[name=kind][value=deny]")
    page.click("button[value=save]")
    page.wait_for_url(re.compile(r".*/ui/constraints\?done="))
    assert decision() == "DENY"
    shot(page, "playground-deny")


def test_a_form_without_its_csrf_token_or_from_another_origin_is_refused(site: Site, page: Any) -> None:
    sign_in_with_key(page, site.url, site.admin_key)
    data = {"template_id": "nocsrf", "image_id": "img", "max_number": "1"}
    assert page.request.post(f"{site.url}/ui/templates", form=data).status == 403
    assert page.request.post(f"{site.url}/ui/templates", form={**data, "csrf": "wrong"}).status == 403
    token = _csrf(page)
    other = page.request.post(
        f"{site.url}/ui/templates", form={**data, "csrf": token}, headers={"origin": "http://evil.example"}
    )
    assert other.status == 403
    page.goto(f"{site.url}/ui/templates")
    assert "nocsrf" not in page.locator("main").text_content()


def test_an_api_key_secret_is_shown_once(site: Site, page: Any) -> None:
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/keys")
    page.fill("#f-api_key_name", "from-console")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#secret").text_content()
    assert secret and secret.startswith("psdk_")
    shot(page, "key-created")
    page.goto(f"{site.url}/ui/keys")
    assert secret not in page.content()
    assert page.locator("td", has_text="from-console").count() == 1


def test_an_operation_without_a_page_runs_from_the_form_its_schema_derives(site: Site, page: Any) -> None:
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/ops")
    page.get_by_role("link", name="create_template", exact=True).click()
    page.fill("#f-template_id", "from-schema")
    page.fill("#f-image_id", "img-s")
    page.fill("#f-tags", '{"team": "<b>ops</b>"}')
    page.get_by_role("button", name="Run create_template").click()
    result = page.locator("section.card pre").text_content()
    assert '"template_id": "from-schema"' in result
    shot(page, "generic-operation")
    page.goto(f"{site.url}/ui/ops/get_template")
    page.fill("#f-template_id", "from-schema")
    page.get_by_role("button", name="Run get_template").click()
    assert '"team": "<b>ops</b>"' in page.locator("section.card pre").text_content()
    assert page.locator("main b").count() == 0
    # a JSON field nested past the one limit every door applies is refused on the page, and nothing is made
    page.goto(f"{site.url}/ui/ops/create_template")
    page.fill("#f-template_id", "too-deep")
    page.fill("#f-image_id", "img-s")
    page.fill("#f-tags", '{"a": ' * 33 + "1" + "}" * 33)
    page.get_by_role("button", name="Run create_template").click()
    assert "nested deeper than 32 levels" in page.locator("main").text_content()
    shot(page, "generic-operation-too-deep")
    page.goto(f"{site.url}/ui/templates")
    assert page.locator("td", has_text="too-deep").count() == 0
