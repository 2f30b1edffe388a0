"""/metrics of a served process counts every authorization decision once, a write refused by tier 1 before its
body is read included, and shows every known label set at 0 before any traffic."""

from __future__ import annotations

from pathlib import Path

import httpx

from pluginsdk import PluginSDK
from tests.scale.test_operator import counter, server
from tests.support.backends import base_config

DECISIONS = "pluginsdk_authz_decisions_total"


def _samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


async def test_refused_writes_count_and_every_decision_counter_starts_at_zero(tmp_path: Path) -> None:
    config = base_config(tmp_path)
    async with PluginSDK(config=config) as sdk:
        await sdk.create_user_roles("reader", ["basicReadOnly"])
        reader = str((await sdk.create_api_key(api_key_name="r", description="read only", user_id="reader")).api_key)
        admin = str((await sdk.create_api_key(api_key_name="a", description="admin", user_id="administrator")).api_key)
    async with server(config, tmp_path) as (url, _log, _proc), httpx.AsyncClient(base_url=url) as c:
        before = (await c.get("/metrics")).text
        assert _samples(before, DECISIONS) == {
            (("outcome", outcome), ("tier", tier)): 0.0 for tier in ("route", "object") for outcome in ("allow", "deny")
        }
        errors = _samples(before, "pluginsdk_provider_errors_total")
        assert {dict(k)["operation"] for k in errors} >= {"launch", "describe", "terminate"}
        assert set(errors.values()) == {0.0}

        refused = await c.post("/api/v1/templates", json={"templateId": "t1", "imageId": "ami-1"},
                               headers={"Authorization": reader})  # fmt: skip
        assert refused.status_code == 403, refused.text
        malformed = await c.post("/api/v1/templates", content=b"{not json", headers={"Authorization": reader})
        assert malformed.status_code == 403, malformed.text
        text = (await c.get("/metrics")).text
        assert counter(text, DECISIONS, tier="route", outcome="deny") == 2
        assert counter(text, DECISIONS, tier="route", outcome="allow") == 0

        made = await c.post("/api/v1/templates", json={"templateId": "t1", "imageId": "ami-1"},
                            headers={"Authorization": admin})  # fmt: skip
        assert made.status_code == 201, made.text
        text = (await c.get("/metrics")).text
        assert counter(text, DECISIONS, tier="route", outcome="allow") == 1  # asked before the body, counted once
        assert counter(text, DECISIONS, tier="object", outcome="allow") == 1
