"""An axe-core scan (npm `axe-core`, from tests/clients) of every console page: no serious or critical
violations."""

from __future__ import annotations

from typing import Any

from tests.console.conftest import Site, sign_in_with_key
from tests.support.npm import npm_clients

PAGES = (
    "/ui/login",
    "/ui/",
    "/ui/templates",
    "/ui/requests",
    "/ui/machines",
    "/ui/constraints",
    "/ui/playground",
    "/ui/keys",
    "/ui/audit",
    "/ui/ops",
    "/ui/ops/list_templates",
    "/ui/roles",
    "/ui/roles/admin",
    "/ui/user-roles",
    "/ui/users",
    "/ui/api-keys",
    "/ui/templates/base",
    "/ui/template-import",
)


def test_no_serious_accessibility_violation_on_any_page(site: Site, browser: Any) -> None:
    axe = (npm_clients() / "node_modules" / "axe-core" / "axe.min.js").read_text()
    # axe is injected by the test, which the pages' CSP (no inline script) would otherwise block
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    try:
        found: dict[str, list[str]] = {}
        for path in PAGES:
            if path == "/ui/":
                sign_in_with_key(page, site.url, site.admin_key)
            else:
                page.goto(f"{site.url}{path}")
            page.evaluate(axe)
            result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
            bad = [
                f"{v['id']}: {v['nodes'][0]['target']}"
                for v in result["violations"]
                if v["impact"] in ("serious", "critical")
            ]
            if bad:
                found[path] = bad
        assert found == {}
    finally:
        context.close()


KEYBOARD_PAGES = (
    "/ui/roles",
    "/ui/roles/admin",
    "/ui/user-roles",
    "/ui/users",
    "/ui/api-keys",
    "/ui/templates/base",
    "/ui/template-import",
    "/ui/audit",
)
MARK_FOCUSABLE = """() => {
  const controls = "a[href], button, input:not([type=hidden]), select, textarea";
  const all = document.querySelectorAll(controls.split(", ").map((c) => "main " + c).join(", "));
  all.forEach((el, i) => el.setAttribute("data-k", String(i)));
  return all.length;
}"""


def test_every_control_of_the_administration_pages_is_reached_by_tab(site: Site, page: Any) -> None:
    sign_in_with_key(page, site.url, site.admin_key)
    missed: dict[str, list[str]] = {}
    for path in KEYBOARD_PAGES:
        page.goto(f"{site.url}{path}")
        count = page.evaluate(MARK_FOCUSABLE)
        reached: set[str] = set()
        for _ in range(count + 40):  # the skip link, the navigation and sign-out come first
            page.keyboard.press("Tab")
            mark = page.evaluate("document.activeElement.getAttribute('data-k')")
            if mark is not None:
                reached.add(mark)
        if len(reached) != count:
            missed[path] = [str(i) for i in range(count) if str(i) not in reached]
        assert count > 0, path
    assert missed == {}
