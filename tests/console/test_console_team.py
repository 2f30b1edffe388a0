"""What a careful reader of the console checks: a read-only reader's template page shows every field REST's GET
answers, destructive acts ask first (and a forged one-click POST does nothing), the what-if preview shows the
same numbers as `POST /auth/whatIf`, and no table breaks a word at 1280 px. Screenshots: see conftest.SHOTS."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.console.conftest import SHOTS, Site, confirm, shot, sign_in_with_key
from tests.console.test_console import _watch_errors

_BROKEN_WORDS = """() => {
  // the words of every table cell broken across lines other than after a separator (- / _ . , ; : =)
  const broken = [];
  const top = (node, i) => {
    const range = document.createRange();
    range.setStart(node, i);
    range.setEnd(node, i + 1);
    const rect = range.getClientRects()[0];
    return rect ? Math.round(rect.top) : null;
  };
  for (const cell of document.querySelectorAll("td, th")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/\\S+/g)) {
        for (let i = m.index + 1; i < m.index + m[0].length; i++) {
          const before = top(node, i - 1), here = top(node, i);
          if (before !== null && here !== null && here > before && !"-/_.,;:=".includes(node.textContent[i - 1])) {
            broken.push(m[0]);
            break;
          }
        }
      }
    }
  }
  return broken;
}"""


def _wide(browser: Any) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10000)
    return context, tab


def test_a_read_only_reader_sees_every_field_of_a_template_and_no_form(site: Site, page: Any) -> None:
    errors = _watch_errors(page)
    sign_in_with_key(page, site.url, site.viewer_key)
    page.goto(f"{site.url}/ui/templates/base")
    answer = page.request.get(f"{site.url}/api/v1/templates/base", headers={"authorization": site.viewer_key})
    assert answer.status == 200
    rest = json.loads(answer.text())
    stored = rest.get("template", rest)
    fields = page.locator("table", has=page.locator("caption", has_text="Fields"))
    shown = {
        str(row.locator("td").nth(0).text_content()): str(row.locator("td").nth(1).text_content())
        for row in fields.locator("tbody tr").all()
    }
    assert set(shown) == set(stored), set(shown) ^ set(stored)
    for name, value in stored.items():
        if value in (None, {}, []):
            assert shown[name] == "none", name
        elif isinstance(value, dict | list):
            assert json.loads(shown[name]) == value, name
        else:
            assert shown[name] == (json.dumps(value) if isinstance(value, bool) else str(value)), name
    assert shown["image_id"] == "img-base" and shown["name"] == "Base template"
    where = str(page.locator("main > p").first.text_content())
    assert "provider instance local (type local, the default)" in where and "simulates the provider API aws" in where
    assert page.locator("main form").count() == 0  # nothing the reader may change
    shot(page, "viewer-template")
    assert errors == []


def test_deleting_a_template_asks_first_and_a_forged_one_click_post_deletes_nothing(site: Site, page: Any) -> None:
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/templates/base")
    csrf = str(page.locator("input[name=csrf]").first.get_attribute("value"))
    forged = page.request.post(f"{site.url}/ui/templates/base/delete", form={"csrf": csrf})
    assert forged.status == 200 and "Delete template base?" in forged.text()
    page.get_by_role("button", name="Delete template").click()
    page.locator("p.warning").wait_for()
    assert "no new request can use it" in str(page.locator("p.warning").text_content())
    shot(page, "confirm-delete-template")
    page.get_by_role("link", name="Go back, change nothing").click()
    page.wait_for_url(f"{site.url}/ui/templates/base")
    assert page.request.get(f"{site.url}/api/v1/templates/base", headers={"authorization": site.admin_key}).ok
    page.get_by_role("button", name="Delete template").click()
    confirm(page, "Delete template")
    page.wait_for_url(re.compile(r".*/ui/templates\?done="))
    gone = page.request.get(f"{site.url}/api/v1/templates/base", headers={"authorization": site.admin_key})
    assert gone.status == 404


def test_the_preview_shows_what_the_what_if_route_answers(site: Site, page: Any) -> None:
    """The issue's case in the browser: a deny on one template for basicReadOnly flips decisions."""
    sign_in_with_key(page, site.url, site.admin_key)
    page.goto(f"{site.url}/ui/constraints")
    page.fill("#f-constraint_id", "hide-base")
    page.select_option("#f-object_type", "template")
    page.fill("#f-field", "templateId")
    page.select_option("#f-operator", "equals")
    page.fill("#f-value", "base")
    page.fill("#f-role", "basicReadOnly")
    page.check("input[name=kind][value=deny]")
    page.click("button[value=preview]")
    text = " ".join(str(page.locator(".preview p").first.text_content()).split())
    shot(page, "constraint-what-if")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".preview").screenshot(path=str(SHOTS / "constraint-what-if-preview.png"))
    body = {
        "addConstraints": [
            {
                "constraintId": "hide-base",
                "name": "hide-base",
                "description": "Written in the console: hide-base",
                "objectType": "template",
                "criteriaAnd": [{"field": "templateId", "operator": "equals", "value": "base"}],
                "groupPermissions": [{"groupId": "basicReadOnly", "permission": "GET", "permissionType": "deny"}],
            }
        ],
        "policyObjects": True,
        "limit": 200,
    }
    answer = page.request.post(f"{site.url}/auth/whatIf", headers={"authorization": site.admin_key}, data=body)
    report = json.loads(answer.text())
    assert report["allowedToDenied"] >= 1
    changed = f"{report['allowedToDenied']} decision{'s' if report['allowedToDenied'] != 1 else ''} would change"
    assert text.startswith(f"{changed} from allowed to denied, {report['deniedToAllowed']} from denied to allowed")
    rows = page.locator(".preview tbody tr")
    assert rows.count() == min(len(report["changes"]), 200)
    assert page.locator(".preview td", has_text='"templateId": "base"').count() >= 1


def test_no_table_breaks_a_word_at_1280_px(site: Site, browser: Any) -> None:
    context, tab = _wide(browser)
    try:
        sign_in_with_key(tab, site.url, site.admin_key)
        for path, name in (("/ui/constraints", "constraints-1280"), ("/ui/", "dashboard-1280"), ("/ui/roles", "")):
            tab.goto(f"{site.url}{path}")
            if name:
                shot(tab, name)
                tab.screenshot(path=str(SHOTS / f"{name}-top.png"))
            assert tab.evaluate(_BROKEN_WORDS) == [], path
    finally:
        context.close()
