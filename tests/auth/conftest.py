"""Auth-service fixtures: configurations, a loopback SMTP server, acting as other users.

Acting as another user: in-process, `PluginSDK(config=..., user="alice")` on
the same store runs every call as alice (her roles resolved from her
assignments). On the remote backend the same helper issues alice an API key
(as the administrator) and opens a remote SDK presenting it.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from pluginsdk import PluginSDK
from pluginsdk.operations import get_spec
from pluginsdk.principal import Principal
from tests.support.backends import base_config, open_sdk
from tests.test_postgres import pg_url  # noqa: F401 -- a fresh PostgreSQL database (skips where none is reachable)

CHEAP_HASHING = {"timeCost": 1, "memoryKib": 8, "parallelism": 1}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Mailbox:
    """Messages the loopback SMTP server received."""

    port: int
    messages: list[Message] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        return "250 Message accepted for delivery"

    def last_body(self) -> str:
        msg = self.messages[-1]
        payload = msg.get_payload(decode=True)
        assert isinstance(payload, bytes)
        return payload.decode()

    def temporary_password(self) -> str:
        for line in self.last_body().splitlines():
            if line.startswith("Temporary password: "):
                return line.removeprefix("Temporary password: ")
        raise AssertionError("no temporary password in the mail")


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    from aiosmtpd.controller import Controller

    box = Mailbox(port=free_port())
    controller = Controller(box, hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


def managed_app(mailbox: Mailbox | None = None, **extra: Any) -> dict[str, Any]:
    """`app` settings: managed pool on, cheap argon2, loopback SMTP."""
    provider: dict[str, Any] = {"useManaged": {"enabled": True, "passwordHashing": CHEAP_HASHING}}
    if mailbox is not None:
        provider["smtp"] = {"host": "127.0.0.1", "port": mailbox.port, "startTls": False, "from": "auth@test"}
    provider.update(extra)
    return {"authProvider": provider}


@pytest.fixture
async def managed_sdk(backend_kind: str, tmp_path: Path, mailbox: Mailbox) -> AsyncIterator[PluginSDK]:
    """A PluginSDK (both backends) with the managed user pool and SMTP configured, acting as administrator."""
    async with open_sdk(backend_kind, tmp_path, app=managed_app(mailbox)) as s:
        yield s


@asynccontextmanager
async def acting_as(sdk: PluginSDK, user_id: str, tmp_path: Path, **extra: Any) -> AsyncIterator[PluginSDK]:
    """A second SDK on the same store, acting as `user_id`."""
    if sdk.backend.name == "local":
        config = base_config(tmp_path, **({"app": dict(sdk.settings.app)} | extra))
        async with PluginSDK(config=config, user=user_id) as other:
            yield other
        return
    roles = await sdk.list_user_roles()
    holds_roles = any(a.user_id == user_id for a in roles.message.items)
    if not holds_roles:  # keys are only issued to users with a role: issue it, then take the role away again
        await sdk.create_user_roles(user_id, ["basicReadOnly"])
    key = await sdk.create_api_key(
        api_key_name=f"acting-{user_id}-{secrets.token_hex(4)}", user_id=user_id, description="acting as user"
    )
    if not holds_roles:
        await sdk.delete_user_roles(user_id)
    async with PluginSDK(backend="remote", api_url=sdk.settings.api.url, api_key=key.api_key) as other:
        yield other


async def call_as(sdk: PluginSDK, principal: Principal, name: str, **params: Any) -> Any:
    """Run an operation on the local engine as an authenticated principal (as the REST server does)."""
    return await sdk.backend.execute(get_spec(name).build(params), principal)


async def authenticate(sdk: PluginSDK, header: str | None) -> Principal:
    engine = sdk.backend.engine  # type: ignore[attr-defined]
    principal: Principal = await engine.authz.authenticate(header)
    return principal


async def with_key(sdk: PluginSDK, key: str, name: str, **params: Any) -> Any:
    """Authenticate an API key like the server does, then run the operation as its principal."""
    return await call_as(sdk, await authenticate(sdk, key), name, **params)


def sleep_past(seconds: float) -> Any:
    return asyncio.sleep(seconds)
