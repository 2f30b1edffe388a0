"""`pluginsdk login --sso`: the CLI signs in through the server's identity provider (a real OpenID provider on
loopback) with a one-shot loopback redirect; the test plays the browser with httpx. The session's token is
kept where `login` keeps a key, and the remote backend then acts as the signed-in user."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.backends import base_config
from tests.support.cli import PLUGINSDK, cli_environment, invoke
from tests.support.oidc import Provider, oidc_app, openid_provider, play_browser
from tests.support.remote import running_server

ACCOUNTS = {"pat": {"email": "pat@example.com", "email_verified": True, "groups": ["platform"]}}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with openid_provider(tmp_path_factory.mktemp("op"), ACCOUNTS) as op:
        yield op


@pytest.fixture
def server(provider: Provider, tmp_path: Path) -> Iterator[str]:
    with running_server(base_config(tmp_path / "server", app=oidc_app(provider))) as url:
        yield url


def _env(tmp_path: Path) -> dict[str, str]:
    return cli_environment(
        tmp_path,
        PYTHON_KEYRING_BACKEND="tests.cli.keyring_file.FileKeyring",
        PLUGINSDK_TEST_KEYRING=str(tmp_path / "keyring.json"),
    )


def _login(env: dict[str, str], server: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """`pluginsdk login URL --sso --no-browser` started; (the process, the sign-in URL it printed)."""
    proc = subprocess.Popen(
        [PLUGINSDK, "--format", "json", "login", server, "--sso", "--no-browser", *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for _ in range(5):
        line = proc.stderr.readline()
        if line.startswith("http://"):
            return proc, line.strip()
    proc.kill()
    raise AssertionError(f"no sign-in URL printed: {proc.communicate(timeout=10)}")


def test_login_sso_keeps_the_session_token_and_the_remote_backend_uses_it(
    server: str, provider: Provider, tmp_path: Path
) -> None:
    env = _env(tmp_path)
    proc, url = _login(env, server)
    assert httpx.URL(url).params["redirect_uri"].startswith("http://127.0.0.1:")
    answer = play_browser(url, httpx.URL(url).params["redirect_uri"], "pat")
    loopback = httpx.get(httpx.URL(url).params["redirect_uri"], params=answer, timeout=10)  # the browser lands
    assert loopback.status_code == 200 and "Signed in" in loopback.text
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["stored"] is True and "session's token" in result["message"]
    kept = json.loads(Path(env["PLUGINSDK_TEST_KEYRING"]).read_text())[f"pluginsdk|{server}"]
    assert kept.startswith("Bearer ey") and kept not in out + err
    # the remote backend presents it: pat's groups made pat an administrator
    remote = {**env, "PLUGIN_API_URL": server}
    res = invoke(remote, "--backend", "remote", "roles", "list")
    assert res.code == 0, res.err
    # forgetting it ends the session at the server too, and names the provider's end-session endpoint
    forgot = invoke(env, "login", server, "--forget")
    assert forgot.code == 0 and f"open {provider.issuer}/session/end" in forgot.json()["message"], forgot.out
    assert not json.loads(Path(env["PLUGINSDK_TEST_KEYRING"]).read_text())
    token = {**remote, "PLUGIN_API_KEY": kept}
    assert invoke(token, "--backend", "remote", "roles", "list").code != 0


def test_auth_logout_ends_a_session_signed_in_with_sso(server: str, provider: Provider, tmp_path: Path) -> None:
    env = _env(tmp_path)
    proc, url = _login(env, server)
    redirect = httpx.URL(url).params["redirect_uri"]
    httpx.get(redirect, params=play_browser(url, redirect, "pat"), timeout=10)
    assert proc.wait(60) == 0
    remote = {**env, "PLUGIN_API_URL": server}
    assert invoke(remote, "--backend", "remote", "auth", "logout").code == 0  # ends the session at the server
    assert invoke(remote, "--backend", "remote", "roles", "list").code != 0


def test_a_callback_for_another_sign_in_is_refused(server: str, provider: Provider, tmp_path: Path) -> None:
    env = _env(tmp_path)
    proc, url = _login(env, server)
    redirect = httpx.URL(url).params["redirect_uri"]
    answer = play_browser(url, redirect, "pat")
    httpx.get(redirect, params={**answer, "state": "X" + answer["state"]}, timeout=10)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and json.loads(out)["error_code"] == "UNAUTHENTICATED", out + err
    assert not Path(env["PLUGINSDK_TEST_KEYRING"]).exists()
