"""The fleet fixtures (tests/support/fleet.py). `fleet` is three servers on one PostgreSQL database behind
HAProxy, then one server with two workers on one SQLite file — each started once for the package (a server
process takes seconds to start), so a test uses template ids and users of its own (`Fleet.keys_for`). Every
server serves `FLEET_CONFIG`: the `local` provider, `slow` (machines that stay pending) and `east` instances,
`east` capped at 3 machines at once and each user at 3 machines per hour; the managed user pool (mail to a
loopback SMTP server: `operator` signs in with a password), with OIDC sign-in through a real OpenID provider
on loopback where Node's clients are at hand (tests/support/oidc.py); `api.held.creations_per_window` 10 (a
flood test's address meets it soon; each other test's few sign-ins do not). A test that needs other settings
starts its own fleet: `async with fleet(kind, config, tmp_path) as f:`. Each module here runs on the
package's event loop: `pytestmark = pytest.mark.asyncio(loop_scope="package")`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pluginsdk import PluginSDK
from tests.auth.conftest import Mailbox, managed_app
from tests.console.conftest import PASSWORD
from tests.support.backends import base_config
from tests.support.fleet import KINDS, Fleet
from tests.support.fleet import fleet as start_fleet
from tests.support.oidc import Provider, oidc_app, openid_provider

FAST = {"type": "local", "boot_delay": 0.05, "terminate_delay": 0.05, "seed": 5}
SLOW = {"type": "local", "boot_delay": 600, "terminate_delay": 0.05, "seed": 6}


OPERATOR = "operator"
"""A managed-pool user with the admin role, signing in with tests.console's PASSWORD."""
CREATIONS = 10
"""`api.held.creations_per_window`: what one address may begin of each kind per minute."""


def fleet_config(tmp_path: Path, box: Mailbox, idp: Provider | None) -> dict[str, Any]:
    """What every server of the package's fleets serves (the store is the fleet's)."""
    quotas = {"max_active": {"east": 3}, "machines_per_user": 3, "window_seconds": 3600}
    app = managed_app(box)
    if idp is not None:  # the managed pool with OIDC sign-in, mailing through the same SMTP server
        app = oidc_app(idp)
        app["authProvider"]["smtp"] = managed_app(box)["authProvider"]["smtp"]
    return base_config(
        tmp_path,
        provider={"instances": {"east": FAST, "slow": SLOW}, "quotas": quotas},
        app=app,
        api={"held": {"creations_per_window": CREATIONS}},
    )


@pytest.fixture(scope="package")
def fleet_idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider | None]:
    """A real OpenID provider for the fleet's federated sign-ins; None where Node's clients are not at hand
    (the tests that need it skip, or fail under PLUGINSDK_REQUIRE_CLIENTS, when they ask for it)."""
    try:
        with openid_provider(tmp_path_factory.mktemp("fleet-idp"), {}) as provider:
            yield provider
    except (pytest.skip.Exception, pytest.fail.Exception):  # the test that needs it says why (`unavailable`)
        yield None


@pytest.fixture(scope="package")
def fleet_mailbox() -> Iterator[Mailbox]:
    """The loopback SMTP server the fleet mails temporary passwords to."""
    from aiosmtpd.controller import Controller

    from tests.support.fleet import free_port

    box = Mailbox(port=free_port())
    controller = Controller(box, hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


@pytest_asyncio.fixture(
    scope="package",
    loop_scope="package",
    params=[pytest.param(k, marks=pytest.mark.postgres) if k == "postgresql" else k for k in KINDS],
)
async def fleet(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    fleet_mailbox: Mailbox,
    fleet_idp: Provider | None,
) -> AsyncIterator[Fleet]:
    tmp_path = tmp_path_factory.mktemp(f"fleet-{request.param}")
    config = fleet_config(tmp_path, fleet_mailbox, fleet_idp)
    async with start_fleet(request.param, config, tmp_path) as f:
        async with PluginSDK(config=f.config) as sdk:
            await sdk.create_managed_user(user_id=OPERATOR, email="operator@example.com")
            await sdk.create_user_roles(user_id=OPERATOR, role_name=["admin"])
            await sdk.login(OPERATOR, fleet_mailbox.temporary_password(), new_password=PASSWORD)
        yield f
