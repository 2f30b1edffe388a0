"""`pluginsdk auth rotate-seal-key`: replace the key that seals secrets in the store, directly in the store.

Not a catalog operation and never a network call, like break-glass: it opens the configured store and its
key itself, so only an operator who holds both can run it. It is refused while any process holds the store
(running processes keep the key in memory). The work is done by the local backend's operator entry point
(`pluginsdk.backend.StoreOperator`; see docs/auth.md, "Secrets at rest").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from . import Context

__all__ = ["rotate_seal_key"]


@click.command("rotate-seal-key")
@click.option(
    "--wait",
    type=click.FloatRange(0, 600),
    default=5.0,
    show_default=True,
    help="Seconds to wait for other processes to let go of the store before refusing.",
)
@click.pass_obj
def rotate_seal_key(ctx: Context, wait: float) -> None:
    """Rotate the sealing key of the local store (stop the servers on it first; PLUGIN_SEAL_KEY_NEW gives the
    new key when the key comes from PLUGIN_SEAL_KEY or the configuration)."""
    import asyncio

    from ..backend import store_operator
    from ..config import load_settings
    from ..errors import SDKError
    from ._output import emit, emit_error

    try:
        settings = load_settings(
            config_path=ctx.options.get("config"), overrides={"logging.level": ctx.options.get("log_level")}
        )
        result = asyncio.run(store_operator().rotate_seal_key(settings, wait=wait))
    except SDKError as exc:
        emit_error(ctx, exc.to_envelope())
        raise SystemExit(1) from None
    emit(ctx, result)
