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
