"""The remote backend's one `httpx.AsyncClient`, built from the `api.*` settings.

TLS is verified by default (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when the environment is
trusted); `api.ca_bundle` swaps in a private CA, `api.client_cert` / `api.client_key` present a client
certificate (mutual TLS), `api.verify: false` switches verification off for a test server. With
`api.trust_env` (the default) httpx takes proxies from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY / NO_PROXY.
Timeouts are per phase (`httpx.Timeout`): connect, read, write, pool.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import TYPE_CHECKING

import httpx

from pluginsdk.errors import ConfigurationError

if TYPE_CHECKING:
    from pluginsdk.config import ApiSettings, Settings

__all__ = ["build_client", "ssl_context", "timeout_of"]


def timeout_of(api: ApiSettings, override: float | httpx.Timeout | None = None) -> httpx.Timeout:
    """The per-phase timeout: `override` (PluginSDK(timeout=...): seconds for every phase, or an
    httpx.Timeout) or the `api.*_timeout` settings."""
    if isinstance(override, httpx.Timeout):
        return override
    if override is not None:
        return httpx.Timeout(override)
    return httpx.Timeout(
        connect=api.connect_timeout, read=api.read_timeout, write=api.write_timeout, pool=api.pool_timeout
    )


def ssl_context(settings: Settings) -> ssl.SSLContext:
    """The TLS context of `api.verify`, `api.ca_bundle`, `api.client_cert` / `api.client_key`; a file that
    cannot be loaded is a ConfigurationError naming its key and source."""
    api = settings.api
    key = "api.ca_bundle"
    try:
        if not api.verify:
            ctx = httpx.create_ssl_context(verify=False)
        elif api.ca_bundle:
            ctx = ssl.create_default_context(cafile=api.ca_bundle)
        elif not api.client_cert:
            return _default_context(api.trust_env, *(os.environ.get(v) for v in ("SSL_CERT_FILE", "SSL_CERT_DIR")))
        else:
            ctx = httpx.create_ssl_context(trust_env=api.trust_env)
        if api.client_cert:
            key = "api.client_key" if api.client_key else "api.client_cert"
            ctx.load_cert_chain(api.client_cert, api.client_key)
    except (OSError, ssl.SSLError) as exc:
        source = settings.source_of(key)
        raise ConfigurationError(
            f"Cannot load {key} (from {source}): {getattr(exc, 'strerror', None) or exc}.", key=key, source=source
        ) from None
    return ctx


@functools.lru_cache(maxsize=4)
def _default_context(trust_env: bool, _cert_file: str | None, _cert_dir: str | None) -> ssl.SSLContext:
    """The verifying context of the default settings, made once per process for each environment it reads
    (`SSL_CERT_FILE` / `SSL_CERT_DIR` when trusted): loading the CA bundle costs ~20 ms, which every
    `PluginSDK(backend="remote")` opened in a long-lived process would pay again. A context holds no per-
    connection state, so clients share it. The two paths only key the cache: httpx reads them itself."""
    return httpx.create_ssl_context(trust_env=trust_env)


def build_client(
    settings: Settings,
    timeout: httpx.Timeout,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """One pooled client for the backend's lifetime. Requests are built whole by the backend and sent with
    `client.send`, so the client's own defaults (base URL, headers) are not merged per call."""
    return httpx.AsyncClient(
        verify=ssl_context(settings),
        timeout=timeout,
        trust_env=settings.api.trust_env,
        transport=transport,
        follow_redirects=False,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
    )
