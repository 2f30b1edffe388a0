"""The auth service of the local engine: identity, the two-tier authorizer, and the auth operations' handlers.

The engine calls `start_auth(engine)` at start; it reads `app.authProvider`,
seeds the default roles once, and returns the Authorizer. What it takes of the
engine is `AuthHost`: the settings, the store, the stored objects tier 2 decides
on and the close hooks; the service keeps only the objects. The engine runs the
commands their operations declare audited through `run_audited` (`audit.py`).
The handlers in `handlers/` are registered by the engine's registry on first
use (`backends.local.engine`, `HandlerRegistry`); nothing here imports the engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from ..store.seal_hold import hold_store
from ..store.sealing import SecretBox, key_check, load_seal_key
from .audit import run_audited
from .config import AuthConfig, load_auth_config
from .crypto import PageTokens, b64d, derive_key
from .defaults import seed
from .service import AuthService
from .store import AuthStore

if TYPE_CHECKING:
    from pluginsdk.config import Settings

    from ..store import Store
    from .objects import ObjectSource

__all__ = ["AuthConfig", "AuthHost", "AuthService", "run_audited", "start_auth"]


class AuthHost(Protocol):
    """What starting the auth service takes of the engine (the engine is one)."""

    settings: Settings
    on_close: list[Callable[[], Awaitable[None]]]

    @property
    def store(self) -> Store: ...

    @property
    def objects(self) -> ObjectSource: ...


async def start_auth(engine: AuthHost) -> AuthService:
    """Prepare the store and return the engine's Authorizer."""
    config = load_auth_config(engine.settings)
    store = AuthStore(engine.store.db)
    # held while the engine runs, so the key cannot be rotated under it (a rotation under way is waited for)
    hold = await hold_store(engine.store.db, exclusive=False, wait=30)
    engine.on_close.append(hold.release)
    try:
        seal = await load_seal_key(engine.settings, engine.store.db, config.secrets_key)  # kept apart from the store
    except BaseException:
        await hold.release()
        raise
    box = SecretBox(seal.key)
    hold.guard(key_check(seal.key), box.retire)
    pages = PageTokens(derive_key(seal.key, "page-tokens", b64d(await store.secret("auth.page_secret"))))
    await seed(store, config.admin_user_id)
    service = AuthService(engine, config, store, box, pages)
    await service.start()
    return service
