"""`pluginsdk login --sso`: the CLI signs in through the server's identity provider (a real OpenID provider on
loopback) with a one-shot loopback redirect; the test plays the browser with httpx. The session's token is
kept where `login` keeps a key, and the remote backend then acts as the signed-in user."""

from __future__ import annotations

import json
import stat
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


def test_login_sso_without_a_keyring_keeps_the_token_in_a_file_only_its_user_reads(
    server: str, provider: Provider, tmp_path: Path
) -> None:
    env = {**_env(tmp_path), "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    proc, url = _login(env, server)
    redirect = httpx.URL(url).params["redirect_uri"]
    page = httpx.get(redirect, params=play_browser(url, redirect, "pat"), timeout=30)
    assert page.status_code == 200 and "Signed in: you may close this window" in page.text
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    path = Path(env["XDG_CONFIG_HOME"]) / "pluginsdk" / "credentials.json"
    result = json.loads(out)
    assert result["stored"] is True and str(path) in result["message"] and "SSO session's token" in result["message"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    kept = json.loads(path.read_text())[server]
    assert kept.startswith("Bearer ey") and kept not in out + err
    remote = {**env, "PLUGIN_API_URL": server}
    assert invoke(remote, "--backend", "remote", "roles", "list").code == 0  # the file's token acts as pat
    forgot = invoke(env, "login", server, "--forget")
    assert forgot.code == 0, forgot.err
    assert forgot.json()["message"].startswith(f"Removed the SSO session's token for {server} from {path}.")
    assert invoke({**remote, "PLUGIN_API_KEY": kept}, "--backend", "remote", "roles", "list").code != 0  # ended


def test_login_sso_refuses_before_the_browser_when_the_token_could_not_be_kept(server: str, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    env = {
        **_env(tmp_path),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "XDG_CONFIG_HOME": str(blocked),
    }
    res = invoke(env, "login", server, "--sso", "--no-browser")
    assert res.code == 1, res.out + res.err
    assert "Sign in at the identity provider" not in res.err  # no sign-in was begun
    envelope = res.json()
    assert envelope["error_code"] == "CONFIGURATION_ERROR" and "Install a keyring backend" in envelope["error"]


def test_the_browser_page_tells_the_truth_about_a_refused_sign_in(provider: Provider, tmp_path: Path) -> None:
    app = oidc_app(provider, allowedEmailDomains=["elsewhere.test"])  # pat's domain is not allowed
    with running_server(base_config(tmp_path / "server", app=app)) as server:
        env = _env(tmp_path)
        proc, url = _login(env, server)
        redirect = httpx.URL(url).params["redirect_uri"]
        page = httpx.get(redirect, params=play_browser(url, redirect, "pat"), timeout=30)
        assert "Not signed in" in page.text and "e-mail domain is not allowed" in page.text, page.text
        assert "Signed in:" not in page.text
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and json.loads(out)["error_code"] == "FORBIDDEN", out + err
    assert not Path(env["PLUGINSDK_TEST_KEYRING"]).exists()
