"""The remote client's deployment options against real loopback servers: TLS verified by default, a CA
bundle, mutual TLS, proxies from the environment, per-phase timeouts, one pooled connection.

The servers here are small scripted HTTP/1.1 servers on asyncio streams (optionally TLS), so a test can
look at what arrived — the request line a proxy sees, the client certificate, the number of connections.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pluginsdk import APIConnectionError, APITimeoutError, ConfigurationError, PluginSDK

REQ = {"request_id": "req-1", "status": "running", "count": 1, "template_id": "t"}


# -- certificates ---------------------------------------------------------------
@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return path


def _issue(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer[0] if issuer else _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    elif subject == "127.0.0.1":
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _issue("pluginsdk test CA", ca_key, None)
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths = {}
    for who, cn in (("server", "127.0.0.1"), ("client", "alice-client")):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(cn, key, (ca.subject, ca_key))
        (d / f"{who}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        paths[who] = (d / f"{who}.pem", _write_key(key, d / f"{who}.key"))
    return Pki(d / "ca.pem", *paths["server"], *paths["client"])


# -- a scripted HTTP/1.1 server ---------------------------------------------------
@dataclass
class Server:
    """Answers every request with `reply` (or hangs for `hang` seconds first); records what arrived."""

    url: str = ""
    reply: dict[str, Any] = field(default_factory=lambda: REQ)
    hang: float = 0.0
    connections: int = 0
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    peer_subjects: list[str] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        cert = writer.get_extra_info("peercert")
        if cert:
            self.peer_subjects.append(dict(x[0] for x in cert["subject"])["commonName"])
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((lines[0], headers))
                if self.hang:
                    await asyncio.sleep(self.hang)
                body = json.dumps(self.reply).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(body), body)
                )
                await writer.drain()
        finally:
            writer.close()


@asynccontextmanager
async def serve(tls: ssl.SSLContext | None = None, **kw: Any) -> AsyncIterator[Server]:
    s = Server(**kw)
    server = await asyncio.start_server(s.handle, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    s.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    async with server:
        yield s
        server.close()


def server_tls(pki: Pki, *, require_client_cert: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.server_cert, pki.server_key)
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki.ca)
    return ctx


def remote(url: str, api: dict[str, Any] | None = None, **kw: Any) -> PluginSDK:
    config = {"api": {"max_retries": 0, **(api or {})}}
    return PluginSDK(backend="remote", api_url=url, api_key="psdk_test", config=config, **kw)


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)
    yield


# -- TLS --------------------------------------------------------------------------------
async def test_tls_is_verified_by_default(pki: Pki) -> None:
    async with serve(server_tls(pki)) as server, remote(server.url) as sdk:
        with pytest.raises(APIConnectionError, match=r"TLS certificate was not accepted.*api\.ca_bundle") as exc:
            await sdk.get_request("req-1")
        assert not isinstance(exc.value, APITimeoutError)
    assert server.requests == []  # nothing was sent over the unverified connection


async def test_a_ca_bundle_from_the_config_or_the_environment_is_trusted(
    pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(server_tls(pki)) as server:
        async with remote(server.url, {"ca_bundle": str(pki.ca)}) as sdk:
            assert (await sdk.get_request("req-1")).request_id == "req-1"
        monkeypatch.setenv("PLUGIN_API_CA_BUNDLE", str(pki.ca))
        async with remote(server.url) as sdk:
            assert (await sdk.get_request("req-1")).request_id == "req-1"
    assert len(server.requests) == 2


async def test_a_ca_file_named_by_the_environment_counts_after_a_default_client_was_made(
    pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clients of the default settings share one verifying context per environment it reads."""
    async with serve(server_tls(pki)) as server:
        async with remote(server.url) as sdk:
            with pytest.raises(APIConnectionError):
                await sdk.get_request("req-1")
        monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
        async with remote(server.url) as sdk:
            assert (await sdk.get_request("req-1")).request_id == "req-1"
        monkeypatch.delenv("SSL_CERT_FILE")
        async with remote(server.url) as sdk:
            with pytest.raises(APIConnectionError):
                await sdk.get_request("req-1")


async def test_verification_can_be_switched_off_for_a_test_server(pki: Pki) -> None:
    async with serve(server_tls(pki)) as server, remote(server.url, {"verify": False}) as sdk:
        assert (await sdk.get_request("req-1")).request_id == "req-1"


async def test_a_client_certificate_is_presented_for_mutual_tls(pki: Pki) -> None:
    async with serve(server_tls(pki, require_client_cert=True)) as server:
        async with remote(server.url, {"ca_bundle": str(pki.ca)}) as sdk:
            with pytest.raises(APIConnectionError):
                await sdk.get_request("req-1")
        mtls = {"ca_bundle": str(pki.ca), "client_cert": str(pki.client_cert), "client_key": str(pki.client_key)}
        async with remote(server.url, mtls) as sdk:
            assert (await sdk.get_request("req-1")).request_id == "req-1"
    assert server.peer_subjects == ["alice-client"]


@pytest.mark.parametrize("key", ["ca_bundle", "client_cert"])
async def test_an_unreadable_tls_file_names_its_key_and_source(key: str, tmp_path: Path) -> None:
    sdk = remote("https://127.0.0.1:9", {key: str(tmp_path / "missing.pem")})
    with pytest.raises(ConfigurationError) as exc:
        await sdk.start()
    assert exc.value.key == f"api.{key}" and exc.value.source == "config dict"
    assert f"api.{key}" in exc.value.message and "config dict" in exc.value.message


# -- proxies ------------------------------------------------------------------------------
async def test_proxies_come_from_the_environment_unless_trust_env_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve() as target, serve() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        async with remote(target.url) as sdk:
            assert (await sdk.get_request("req-1")).request_id == "req-1"
        assert proxy.requests and target.requests == []
        line, headers = proxy.requests[0]
        assert line == f"GET {target.url}/api/v1/requests/req-1?long=false&lightweight=false HTTP/1.1"
        assert headers["authorization"] == "psdk_test"
        async with remote(target.url, {"trust_env": False}) as sdk:
            assert (await sdk.get_request("req-1")).request_id == "req-1"
        assert len(target.requests) == 1 and len(proxy.requests) == 1


# -- timeouts and the pool ----------------------------------------------------------------
async def test_the_read_timeout_is_a_setting_and_its_own_error() -> None:
    async with serve(hang=5) as server, remote(server.url, {"read_timeout": 0.3}) as sdk:
        t = time.monotonic()
        with pytest.raises(APITimeoutError) as exc:
            await sdk.get_request("req-1")
        assert time.monotonic() - t < 3
    assert exc.value.details["phase"] == "read" and exc.value.details["timeout"] == 0.3
    assert "read timeout 0.3s" in exc.value.message


async def test_timeouts_per_phase_from_settings_or_one_argument() -> None:
    api = {"connect_timeout": 1.5, "read_timeout": 40, "write_timeout": 7, "pool_timeout": 2}
    async with remote("http://127.0.0.1:9", api) as sdk:
        assert sdk.backend.timeout == httpx.Timeout(connect=1.5, read=40, write=7, pool=2)  # type: ignore[attr-defined]
    async with remote("http://127.0.0.1:9", api, timeout=3) as sdk:
        assert sdk.backend.timeout == httpx.Timeout(3)  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match=r"api\.read_timeout"):
        await remote("http://127.0.0.1:9", {"read_timeout": 0}).start()


async def test_calls_share_one_keep_alive_connection() -> None:
    async with serve() as server, remote(server.url) as sdk:
        for _ in range(5):
            await sdk.get_request("req-1")
    assert len(server.requests) == 5 and server.connections == 1


async def test_a_refused_connection_is_a_connection_error() -> None:
    async with serve() as server:
        url = server.url
    async with remote(url) as sdk:
        with pytest.raises(APIConnectionError, match="cannot reach the pluginsdk server") as exc:
            await sdk.get_request("req-1")
    assert exc.value.details["url"] == url and not isinstance(exc.value, APITimeoutError)


async def test_concurrent_calls_share_the_pool() -> None:
    async with serve(hang=0.05) as server, remote(server.url) as sdk:
        answers = await asyncio.gather(*(sdk.get_request("req-1") for _ in range(40)))
        assert {a.request_id for a in answers} == {"req-1"} and len(server.requests) == 40
        assert 1 < server.connections <= 40
        before = server.connections
        await asyncio.gather(*(sdk.get_request("req-1") for _ in range(10)))
        assert server.connections == before  # kept alive and reused
