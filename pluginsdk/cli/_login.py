"""`pluginsdk login`: keep a server's API key where the remote backend looks for it.

The key is read from `--api-key`, a hidden prompt, or stdin when piped; it is never echoed. It is kept in the
OS keyring, or where there is no usable keyring backend (a headless server) in a file only its user can read
(`pluginsdk.credentials`); where neither can keep it, nothing is stored and the message says how to pass the
key instead.

`--sso` signs in through the server's identity provider instead (OAuth 2.0 for native apps, RFC 8252): a
one-shot listener on 127.0.0.1 at a free port is the redirect URI, the sign-in URL is printed (and opened
in a browser unless `--no-browser`), and the session's `Bearer` id token the server returns is what is
kept, in the same place as a key. Where it could not be kept, `--sso` refuses before the browser opens; a
token that still fails to be kept has its session ended at once (never a live session nobody holds). The
browser's page says how the sign-in ended (signed in, or refused and why). `--forget` of a kept session
token also ends its session at the server (and names the identity provider's end-session URL, where it has
one).
"""

from __future__ import annotations

import contextlib
import hmac
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from collections.abc import Callable

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
    """Keep (or with key None, remove) the credential for `url`; (done, message)."""
    from .. import credentials

    if key is None:
        kept = credentials.read(url)
        removed = credentials.delete(url)
        if not removed.done:
            return True, f"Nothing was stored for {url}."
        what = "the SSO session's token" if kept and kept.startswith("Bearer ") else "the API key"
        return True, f"Removed {what} for {url} from {removed.where}."
    stored = credentials.write(url, key)
    if not stored.done:
        return False, _not_stored(stored.where)
    return True, f"Stored the API key for {url} in {stored.where}."


def _not_stored(why: str) -> str:
    return (
        f"No usable OS keyring, and the credentials file cannot be written: {why}; nothing was stored. Pass the "
        "key with PLUGIN_API_KEY or api.key in the configuration file, or install a keyring backend (see the "
        "keyring docs)."
    )


_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>pluginsdk</title></head>'
    "<body><p>{text}</p></body></html>"
)


class _Callback:
    """The one-shot loopback listener: the first GET /callback's query parameters; the browser's page waits for
    how the sign-in ended (`outcome`), so it never says "signed in" for a refused one."""

    def __init__(self) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        self.answer: asyncio.Future[dict[str, str]] = loop.create_future()
        self.outcome: asyncio.Future[str] = loop.create_future()

    def finish(self, text: str) -> None:
        """What the browser's page says (the first call wins)."""
        if not self.outcome.done():
            self.outcome.set_result(text)

    async def handle(self, reader: Any, writer: Any) -> None:
        import asyncio
        import html
        from urllib.parse import parse_qs, urlsplit

        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while await asyncio.wait_for(reader.readline(), 10) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
            if target is not None and target.path == "/callback" and not self.answer.done():
                self.answer.set_result({k: v[-1] for k, v in parse_qs(target.query).items()})
                try:
                    text = await asyncio.wait_for(asyncio.shield(self.outcome), 60)
                except TimeoutError:
                    text = "The sign-in is still being finished: see the terminal."
                status = "200 OK"
            else:
                status, text = "404 Not Found", "Not found."
            body = _PAGE.format(text=html.escape(text)).encode()
            head = f"HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {len(body)}\r\n"
            writer.write(head.encode() + b"connection: close\r\ncache-control: no-store\r\n\r\n" + body)
            await writer.drain()
        except (TimeoutError, OSError, UnicodeError):
            pass
        finally:
            writer.close()


async def _sso(server: str, open_browser: bool, seconds: float, keep: Callable[[str], tuple[bool, str]]) -> str:
    """Sign in through the server's identity provider and `keep` the session's `Bearer` token; the message.
    A token that could not be kept has its session ended at the server before the error is raised."""
    import asyncio
    import webbrowser

    from ..errors import AuthenticationError, ConfigurationError, SDKError
    from ..sdk import PluginSDK

    callback = _Callback()
    listener = await asyncio.start_server(callback.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener, PluginSDK(backend="remote", api_url=server) as sdk:
        try:
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
                why = answer.get("error_description") or answer.get("error", "no code")
                raise AuthenticationError(f"The identity provider did not sign you in ({why}).")
            tokens = await sdk.finish_federated_sign_in(state=begun.state, code=answer["code"])
            token = f"Bearer {tokens.id_token}"
            stored, message = keep(token)
            if not stored:
                async with PluginSDK(backend="remote", api_url=server, api_key=token) as signed_in:
                    with contextlib.suppress(SDKError):
                        await signed_in.logout()
                raise ConfigurationError(f"Signed in, but the session's token could not be kept: {message}")
        except SDKError as err:
            callback.finish(f"Not signed in: {err.message}")
            await _let_the_page_go(callback)
            raise
        callback.finish("Signed in: you may close this window and return to the terminal.")
        await _let_the_page_go(callback)
    minutes = int(tokens.expires_in or 0) // 60
    return message.replace("the API key", "the SSO session's token") + f" It lasts {minutes} minutes."


async def _let_the_page_go(callback: _Callback) -> None:
    """Give the browser's waiting request a moment to receive its page before the listener closes."""
    import asyncio

    if callback.answer.done():
        await asyncio.sleep(0.05)


def _kept(url: str) -> str | None:
    """What `login` keeps for `url` (None when nothing)."""
    from .. import credentials

    return credentials.read(url)


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


def _credential(server: str, api_key: str | None, *, verify: bool, forget: bool) -> str | None:
    """What to keep: the key, or None to forget."""
    import asyncio

    key = None if forget else _read_key(api_key)
    if key == "":
        raise click.UsageError("The API key is empty.")
    if key is not None and verify:
        asyncio.run(_check(server, key))
    return key


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
    """Keep a server's API key (or, with --sso, a session's token) for `--backend remote`.

    In the OS keyring, or without a usable one in a file only you can read."""
    import asyncio
    from functools import partial

    from ..errors import SDKError
    from ._output import check_output, emit, emit_error

    check_output(ctx.options.get("output"))
    server = _server_url(ctx, url)
    if sso and (api_key or forget):
        raise click.UsageError("--sso signs in through the identity provider: no --api-key or --forget with it.")
    try:
        if sso:
            _refuse_unless_keepable()
            message = asyncio.run(_sso(server, browser, sso_timeout, partial(_store, server)))
            emit(ctx, {"success": True, "url": server, "stored": True, "message": message})
            return
        key = _credential(server, api_key, verify=verify, forget=forget)
    except SDKError as err:
        emit_error(ctx, err.to_envelope())
        sys.exit(1)
    ended = _end_kept_session(server) if forget else None
    stored, message = _store(server, key)
    if ended:
        message += f" The session ended; to end the identity provider's session too, open {ended}"
    if not stored:
        click.echo(f"Warning: {message}", err=True)
    result: dict[str, Any] = {"success": True, "url": server, "removed" if forget else "stored": stored}
    emit(ctx, result | {"message": message})


def _refuse_unless_keepable() -> None:
    """Refuse a sign-in before the browser opens when its token could not be kept."""
    from .. import credentials
    from ..errors import ConfigurationError

    why = credentials.writable_here()
    if why is not None:
        raise ConfigurationError(
            f"Not signing in: the session's token could not be kept ({why}). Install a keyring backend, or make "
            f"{credentials.credentials_file().parent} writable (XDG_CONFIG_HOME moves it), or sign in with an API "
            "key instead (PLUGIN_API_KEY)."
        )
