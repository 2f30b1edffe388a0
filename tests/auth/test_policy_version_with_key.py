"""An API-key request reads the policy version with its key (one statement, not two) and is decided on it;
a policy change made by another process still bites on the very next request, both ways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pluginsdk import PluginSDK
from pluginsdk.errors import PermissionDeniedError
from pluginsdk.operations import get_spec
from tests.auth.grants import failure, role, rule
from tests.support.backends import base_config


def service(sdk: PluginSDK) -> Any:
    return sdk.backend.engine.authz  # type: ignore[attr-defined]


async def test_the_version_read_with_the_key_decides_and_a_change_elsewhere_bites_next(tmp_path: Path) -> None:
    # two processes' engines on one SQLite store: A administers, B serves a key's requests as the server does
    async with PluginSDK(config=base_config(tmp_path)) as a, PluginSDK(config=base_config(tmp_path)) as b:
        await role(a, "readers", methods=("GET",))
        await a.create_user_roles("alice", ["readers"])
        await rule(a, "readers", "template", [("templateId", "equals", "web")])
        await a.create_template(template_id="web", image_id="ami-1")
        key = str((await a.create_api_key(api_key_name="alice-key", user_id="alice", description="alice")).api_key)
        sb = service(b)
        read = get_spec("get_template").build({"template_id": "web"})

        async def call() -> Any:
            principal = await sb.authenticate(key)
            return await b.backend.execute(read, principal, route_path="/api/v1/templates/web")

        await call()
        reads = sb.watch.reads
        for _ in range(5):
            await call()
        assert sb.watch.reads == reads  # the version came with the key's row: no read of its own

        deny = await rule(a, "readers", "api", [("route__path", "equals", "/api/v1/templates/web")], kind="deny")
        refused = await failure(call())  # the next request through B, after A's change
        assert isinstance(refused, PermissionDeniedError)
        await a.delete_constraint(deny)
        assert (await call()).template.template_id == "web"  # and the next one after A takes it back
