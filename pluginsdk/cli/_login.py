"""`pluginsdk login`: keep a server's API key in the OS keyring, where the remote backend looks for it.

The key is read from `--api-key`, a hidden prompt, or stdin when piped; it is never echoed. Without a
usable keyring backend (a headless box) nothing is stored and the message says how to pass the key
instead; that is a state to report, not a failure.

`--sso` signs in through the server's identity provider instead (OAuth 2.0 for native apps, RFC 8252): a
one-shot listener on 127.0.0.1 at a free port is the redirect URI, the sign-in URL is printed (and opened
in a browser unless `--no-browser`), and the session's `Bearer` id token the server returns is what is
kept, in the same place as a key. `--forget` of a kept session token also ends its session at the server
(and names the identity provider's end-session URL, where it has one).
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


_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>pluginsdk</title></head>'
    "<body><p>{text}</p></body></html>"
)


class _Callback:
    """The one-shot loopback listener: the first GET /callback's query parameters."""

    def __init__(self) -> None:
        import asyncio

        self.answer: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()

    async def handle(self, reader: Any, writer: Any) -> None:
        import asyncio
        from urllib.parse import parse_qs, urlsplit

        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while await asyncio.wait_for(reader.readline(), 10) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
            if target is not None and target.path == "/callback" and not self.answer.done():
                self.answer.set_result({k: v[-1] for k, v in parse_qs(target.query).items()})
                status, text = "200 OK", "Signed in: you may close this window and return to the terminal."
            else:
                status, text = "404 Not Found", "Not found."
            body = _PAGE.format(text=text).encode()
            head = f"HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {len(body)}\r\n"
            writer.write(head.encode() + b"connection: close\r\ncache-control: no-store\r\n\r\n" + body)
            await writer.drain()
        except (TimeoutError, OSError, UnicodeError):
            pass
        finally:
            writer.close()


async def _sso(server: str, open_browser: bool, seconds: float) -> tuple[str, int]:
    """Sign in through the server's identity provider: (the Authorization value to keep, its lifetime)."""
    import asyncio
    import webbrowser

    from ..errors import AuthenticationError
    from ..sdk import PluginSDK

    callback = _Callback()
    listener = await asyncio.start_server(callback.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener, PluginSDK(backend="remote", api_url=server) as sdk:
        begun = await sdk.start_federated_sign_in(redirect_uri=f"http://127.0.0.1:{port}/callback")
        click.echo(f"Sign in at the identity provider:\n{begun.redirect_url}", err=True)
        if open_browser:
            with contextlib.suppress(Exception):  # no browser here: the printed URL is the way
                webbrowser.open(begun.redirect_url)
        try:
            answer = await asyncio.wait_for(asyncio.shield(callback.answer), seconds)
        except TimeoutError:
            raise AuthenticationError(f"No answer from the identity provider within {seconds:g} s.") from None
        if not hmac.compare_digest(answer.get("state", "").encode(), begun.state.encode()):
            raise AuthenticationError("The identity provider's answer belongs to another sign-in; start again.")
        if answer.get("error") or not answer.get("code"):
            raise AuthenticationError(f"The identity provider did not sign you in ({answer.get('error', 'no code')}).")
        tokens = await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
    return f"Bearer {tokens.id_token}", int(tokens.expires_in or 0)


def _kept(url: str) -> str | None:
    """What `login` keeps for `url` in the OS keyring (None when nothing, or no usable keyring)."""
    import keyring
    from keyring.errors import KeyringError

    from ..constants import KEYRING_SERVICE

    try:
        value: str | None = keyring.get_password(KEYRING_SERVICE, url)
    except (KeyringError, RuntimeError):
        return None
    return value


async def _sign_out(server: str, kept: str) -> str | None:
    """End the session a kept `Bearer` token names at the server; the provider's end-session URL, if any."""
    from ..errors import SDKError
    from ..sdk import PluginSDK

    async with PluginSDK(backend="remote", api_url=server, api_key=kept) as sdk:
        with contextlib.suppress(SDKError):  # an ended or expired session: nothing left to end
            await sdk.logout()
        with contextlib.suppress(SDKError):
            found: str | None = (await sdk.get_sign_in_options()).end_session_url
            return found
    return None


def _credential(
    server: str, api_key: str | None, *, verify: bool, forget: bool, sso: tuple[bool, bool, float]
) -> tuple[str | None, int]:
    """(what to keep: the key, a session's `Bearer` token, or None to forget; the token's lifetime)."""
    import asyncio

    signs_in, browser, seconds = sso
    if signs_in:
        return asyncio.run(_sso(server, browser, seconds))
    key = None if forget else _read_key(api_key)
    if key == "":
        raise click.UsageError("The API key is empty.")
    if key is not None and verify:
        asyncio.run(_check(server, key))
    return key, 0


def _end_kept_session(server: str) -> str | None:
    """A kept session token's session ended at the server; the provider's end-session URL, if any."""
    import asyncio

    kept = _kept(server)
    if kept is None or not kept.startswith("Bearer "):
        return None
    return asyncio.run(_sign_out(server, kept))


@click.command("login")
@click.argument("url", required=False)
@click.option("--api-key", help="The key (default: a hidden prompt, or one line of stdin when piped).")
@click.option("--verify/--no-verify", default=True, help="Check the key against the server first (default on).")
@click.option("--forget", is_flag=True, help="Remove the stored key for URL instead.")
@click.option("--sso", is_flag=True, help="Sign in through the server's identity provider instead of a key.")
@click.option("--browser/--no-browser", default=True, help="With --sso: open the sign-in URL in a browser.")
@click.option("--sso-timeout", type=float, default=300.0, show_default=True, help="With --sso: seconds to wait.")
@click.pass_obj
def login(
    ctx: Context,
    *,
    url: str | None,
    api_key: str | None,
    verify: bool,
    forget: bool,
    sso: bool,
    browser: bool,
    sso_timeout: float,
) -> None:
    """Store a server's API key (or, with --sso, a session's token) in the OS keyring for `--backend remote`."""
    from ..errors import SDKError
    from ._output import check_output, emit, emit_error

    check_output(ctx.options.get("output"))
    server = _server_url(ctx, url)
    if sso and (api_key or forget):
        raise click.UsageError("--sso signs in through the identity provider: no --api-key or --forget with it.")
    try:
        key, lifetime = _credential(server, api_key, verify=verify, forget=forget, sso=(sso, browser, sso_timeout))
    except SDKError as err:
        emit_error(ctx, err.to_envelope())
        sys.exit(1)
    ended = _end_kept_session(server) if forget else None
    stored, message = _store(server, key)
    if ended:
        message += f" The session ended; to end the identity provider's session too, open {ended}"
    if sso and stored:
        message = message.replace("the API key", "the session's token") + f" It lasts {lifetime // 60} minutes."
    if not stored:
        click.echo(f"Warning: {message}", err=True)
    result: dict[str, Any] = {"success": True, "url": server, "removed" if forget else "stored": stored}
    emit(ctx, result | {"message": message})
