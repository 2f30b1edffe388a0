"""`pluginsdk auth break-glass --user ID`: give the administrator role back, directly in the store.

Not a catalog operation and never a network call: it opens the configured store itself (SQLite file or
PostgreSQL URL), so only an operator who holds the store can run it. The work is done by the local
backend's operator entry point (`pluginsdk.backend.StoreOperator`; see docs/auth.md, "Break-glass recovery").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from . import Context

__all__ = ["break_glass"]


@click.command("break-glass")
@click.option("--user", "user_id", required=True, help="User to give the admin role back to.")
@click.pass_obj
def break_glass(ctx: Context, user_id: str) -> None:
    """Re-grant the admin role to USER in the local store (recovery when nobody can administer roles)."""
    import asyncio

    from ..backend import store_operator
    from ..config import load_settings
    from ..errors import SDKError
    from ._output import emit, emit_error

    try:
        settings = load_settings(
            config_path=ctx.options.get("config"), overrides={"logging.level": ctx.options.get("log_level")}
        )
        result = asyncio.run(store_operator().break_glass(settings, user_id))
    except SDKError as exc:
        emit_error(ctx, exc.to_envelope())
        raise SystemExit(1) from None
    emit(ctx, result)
    if not result["canAdminister"]:
        click.echo(
            f"Delete them with `pluginsdk constraints delete ID`, then run `pluginsdk auth break-glass --user "
            f"{user_id}` again.",
            err=True,
        )
        raise SystemExit(1)
