"""Self-service cannot undo an administrator (both backends): a key an administrator deactivated stays off,
and an expiry an administrator set is a ceiling for the self-service routes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from pluginsdk import PermissionDeniedError, PluginSDK
from tests.auth.conftest import acting_as
from tests.auth.grants import failure


def days(n: float) -> str:
    return (datetime.now(UTC) + timedelta(days=n)).isoformat()


async def test_admin_deactivation_cannot_be_undone_by_the_owner(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("kim", ["basicReadOnly"])
    async with acting_as(sdk, "kim", tmp_path) as kim:
        key = await kim.create_my_api_key(api_key_name="laptop", description="kim's laptop", expires_at=days(30))
        own = await kim.create_my_api_key(api_key_name="desk", description="kim's desk", expires_at=days(30))
        await sdk.update_api_key(key.api_key_id, is_active="false")
        err = await failure(kim.update_my_api_key(key.api_key_id, is_active="true"))
        assert isinstance(err, PermissionDeniedError) and "administrator" in err.message
        assert (await kim.get_my_api_key(key.api_key_id)).is_active == "false"
        await kim.update_my_api_key(key.api_key_id, description="still off, renamed")  # other changes are fine
        await kim.update_my_api_key(own.api_key_id, is_active="false")  # what kim switched off, kim may switch on
        assert (await kim.update_my_api_key(own.api_key_id, is_active="true")).is_active == "true"
        await sdk.update_api_key(key.api_key_id, is_active="true")  # the administrator lifts it
        await kim.update_my_api_key(key.api_key_id, is_active="false")
        assert (await kim.update_my_api_key(key.api_key_id, is_active="true")).is_active == "true"


async def test_admin_expiry_is_a_ceiling_for_self_service(sdk: PluginSDK, tmp_path: Path) -> None:
    await sdk.create_user_roles("lee", ["basicReadOnly"])
    issued = await sdk.create_api_key(api_key_name="ci", user_id="lee", description="lee's CI key", expires_at=days(10))
    async with acting_as(sdk, "lee", tmp_path) as lee:
        mine = await lee.create_my_api_key(api_key_name="own", description="lee's own key", expires_at=days(30))
        for key_id in (issued.api_key_id, mine.api_key_id):
            if key_id == mine.api_key_id:
                await sdk.update_api_key(key_id, expires_at=days(10))  # an administrator shortens it
            err = await failure(lee.update_my_api_key(key_id, expires_at=days(20)))
            assert isinstance(err, PermissionDeniedError) and err.status == 403
            assert (await lee.update_my_api_key(key_id, expires_at=days(5))).expires_at is not None  # shorter: fine
            assert isinstance(await failure(lee.update_my_api_key(key_id, expires_at=days(11))), PermissionDeniedError)
        await sdk.update_api_key(mine.api_key_id, expires_at=None)  # cleared by the administrator: no ceiling
        await lee.update_my_api_key(mine.api_key_id, expires_at=days(60))
