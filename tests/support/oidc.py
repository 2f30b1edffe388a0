"""A real OpenID provider on loopback (panva's `oidc-provider`, from tests/clients) and a browser played with httpx.

`openid_provider(tmp_path, accounts)` runs `tests/auth/federation/oidc_provider.mjs` under Node with a static client
(`CLIENT_ID`/`CLIENT_SECRET`, a native client: loopback redirect URIs on any port), a signing key the test
made (so a test can mint a token the provider's key signs, `Provider.mint`), and `accounts` (login name ->
claims: `email`, `groups`). The provider's own development login and consent pages sign users in.
`play_browser` follows a sign-in URL through those pages to the redirect URI and returns its query.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.support.npm import npm_clients

__all__ = [
    "CLIENT_ID",
    "CLIENT_SECRET",
    "Provider",
    "TamperingTokenEndpoint",
    "oidc_app",
    "openid_provider",
    "play_browser",
]

SCRIPT = Path(__file__).resolve().parents[1] / "auth" / "federation" / "oidc_provider.mjs"
CLIENT_ID = "pluginsdk-test"
CLIENT_SECRET = "a-client-secret-for-the-tests-only-0123456789"
CHEAP_HASHING = {"timeCost": 1, "memoryKib": 8, "parallelism": 1}


@dataclass
class Provider:
    issuer: str
    key: Any = field(repr=False)
    kid: str

    @property
    def discovery(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def mint(self, claims: dict[str, Any], key: Any = None) -> str:
        """A JWT signed with the provider's key (or `key`), as the provider signs its ID tokens."""
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.kid})


@contextmanager
def openid_provider(tmp_path: Path, accounts: dict[str, dict[str, Any]]) -> Iterator[Provider]:
    root = npm_clients()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key))
    jwk.update({"kid": "test-key", "alg": "RS256", "use": "sig"})
    config = {
        "module": str(root / "node_modules" / "oidc-provider" / "lib" / "index.js"),
        "client": {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "application_type": "native",
            "redirect_uris": ["http://127.0.0.1/ui/sso/oidc/callback", "http://127.0.0.1/callback"],
            "post_logout_redirect_uris": ["http://127.0.0.1/ui/login"],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_basic",
        },
        "jwks": {"keys": [jwk]},
        "accounts": accounts,
    }
    path = tmp_path / "oidc-provider.json"
    path.write_text(json.dumps(config))
    proc = subprocess.Popen(["node", str(SCRIPT), str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(proc.stdout.readline().strip()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(30)
        if not found or not found[0].startswith("http://127.0.0.1:"):
            proc.kill()
            raise RuntimeError(f"oidc-provider did not start: {proc.stderr.read() if proc.stderr else ''}"[:2000])
        yield Provider(found[0], key, "test-key")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def oidc_app(provider: Provider, token_endpoint: str = "", **federation: Any) -> dict[str, Any]:
    """`app` settings: the managed pool with OIDC sign-in through `provider`."""
    idp = {
        "issuer": provider.issuer,
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "discoveryEndpoint": provider.discovery,
        "scope": "openid email groups",
        "displayName": "Test IdP",
        "jwksMinRefreshSeconds": 0,
    }
    if token_endpoint:
        idp["tokenEndpoint"] = token_endpoint
    fed = {"roleMapping": {"platform": ["admin"], "engineers": ["basicReadOnly"]}, **federation}
    return {
        "authProvider": {
            "useManaged": {"enabled": True, "useOidc": True, "passwordHashing": CHEAP_HASHING},
            "useExternalOAuthIdp": idp,
            "federation": fed,
            "authorizerOptions": {"defaultUserRoleName": None},
        }
    }


_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')


def play_browser(url: str, redirect_uri: str, login: str, *, client: httpx.Client | None = None) -> dict[str, str]:
    """Follow `url` through the provider's login (any password) and consent pages; the query the provider
    sends to `redirect_uri` (not requested: the caller decides what to do with it)."""
    own = client or httpx.Client(follow_redirects=False, timeout=20)
    try:
        resp = own.get(url)
        for _ in range(20):
            if resp.is_redirect:
                target = urljoin(str(resp.url), resp.headers["location"])
                if target.startswith(redirect_uri):
                    return {k: v[-1] for k, v in parse_qs(urlsplit(target).query).items()}
                resp = own.get(target)
                continue
            action = _ACTION.search(resp.text)
            assert resp.status_code == 200 and action, (resp.status_code, resp.text[:2000])
            if 'name="login"' in resp.text:
                data = {"prompt": "login", "login": login, "password": "any password"}
            else:
                data = {"prompt": "consent"}
            resp = own.post(urljoin(str(resp.url), action.group(1)), data=data)
        raise AssertionError("the provider's pages did not end at the redirect URI")
    finally:
        if client is None:
            own.close()


class TamperingTokenEndpoint:
    """A token endpoint in front of the provider's that replaces the ID token by `tamper(claims)` re-signed
    with the provider's key (or, with `key` set, another key): what a forged or stale token looks like."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.tamper: Any = None
        self.key: Any = None
        upstream = f"{provider.issuer}/token"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                resp = httpx.post(upstream, content=body, headers=headers, timeout=20)
                data = resp.json()
                if resp.status_code == 200 and outer.tamper is not None:
                    claims = jwt.decode(data["id_token"], options={"verify_signature": False})
                    data["id_token"] = outer.provider.mint(outer.tamper(claims), outer.key)
                out = json.dumps(data).encode()
                self.send_response(resp.status_code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def now() -> int:
    return int(time.time())
