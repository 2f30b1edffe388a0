"""`pluginsdk login`: keep a server's API key in the OS keyring, where the remote backend looks for it.

The key is read from `--api-key`, a hidden prompt, or stdin when piped; it is never echoed. Without a
usable keyring backend (a headless box) nothing is stored and the message says how to pass the key
instead; that is a state to report, not a failure.
"""

from __future__ import annotations

import contextlib
import hmac
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from . import Context

__all__ = ["login"]


def _server_url(ctx: Context, url: str | None) -> str:
    if url:
        return url.rstrip("/")
    from ..config import load_settings

    settings = load_settings(config_path=ctx.options.get("config"))
    if not settings.api.url:
        raise click.UsageError("Give the server URL: `pluginsdk login URL` (or set PLUGIN_API_URL / api.url).")
    return settings.api.url.rstrip("/")


def _read_key(api_key: str | None) -> str:
    if api_key:
        return api_key.strip()
    if sys.stdin.isatty():
        return str(click.prompt("API key", hide_input=True, err=True)).strip()
    return sys.stdin.readline().strip()


async def _check(url: str, key: str) -> None:
    """Raise AuthenticationError when the server rejects the key (a permission denial still proves it valid)."""
    from ..errors import PermissionDeniedError
    from ..sdk import PluginSDK

    async with PluginSDK(backend="remote", api_url=url, api_key=key) as sdk:
        with contextlib.suppress(PermissionDeniedError):
            await sdk.call("get_system_status")


def _store(url: str, key: str | None) -> tuple[bool, str]:
    """Write (or with key None, delete) the keyring entry; (done, message)."""
    import keyring
    from keyring.errors import KeyringError, PasswordDeleteError

    from ..constants import KEYRING_SERVICE

    backend = type(keyring.get_keyring())
    where = f"{backend.__module__}.{backend.__qualname__}"
    try:
        if key is None:
            keyring.delete_password(KEYRING_SERVICE, url)
            return True, f"Removed the API key for {url} from the OS keyring ({where})."
        keyring.set_password(KEYRING_SERVICE, url, key)
        # some backends accept and drop the key (keyring.backends.null): only a read-back proves it stored
        kept = keyring.get_password(KEYRING_SERVICE, url)
        if kept is None or not hmac.compare_digest(kept.encode(), key.encode()):
            return False, _not_stored(where, "it does not keep passwords")
        return True, f"Stored the API key for {url} in the OS keyring ({where})."
    except PasswordDeleteError:
        return True, f"No API key was stored for {url}."
    except (KeyringError, RuntimeError) as exc:
        return False, _not_stored(where, str(exc))


def _not_stored(where: str, why: str) -> str:
    return (
        f"No usable OS keyring ({where}: {why}); nothing was stored. Pass the key with PLUGIN_API_KEY "
        "or api.key in the configuration file, or install a keyring backend (see the keyring docs)."
    )


@click.command("login")
@click.argument("url", required=False)
@click.option("--api-key", help="The key (default: a hidden prompt, or one line of stdin when piped).")
@click.option("--verify/--no-verify", default=True, help="Check the key against the server first (default on).")
@click.option("--forget", is_flag=True, help="Remove the stored key for URL instead.")
@click.pass_obj
def login(ctx: Context, url: str | None, api_key: str | None, verify: bool, forget: bool) -> None:
    """Store a server's API key in the OS keyring for `--backend remote`."""
    import asyncio

    from ..errors import SDKError
    from ._output import check_output, emit, emit_error

    check_output(ctx.options.get("output"))
    server = _server_url(ctx, url)
    key = None if forget else _read_key(api_key)
    if key == "":
        raise click.UsageError("The API key is empty.")
    if key is not None and verify:
        try:
            asyncio.run(_check(server, key))
        except SDKError as err:
            emit_error(ctx, err.to_envelope())
            sys.exit(1)
    stored, message = _store(server, key)
    if not stored:
        click.echo(f"Warning: {message}", err=True)
    result: dict[str, Any] = {"success": True, "url": server, "removed" if forget else "stored": stored}
    emit(ctx, result | {"message": message})
