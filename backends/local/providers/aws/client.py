"""AWS calls through botocore's own retries, with attempt counting and scrubbed errors.

Retrying is botocore's: its `standard` mode (default) or `adaptive` mode (standard plus a client-side rate
limiter that slows down once AWS throttles) retries throttling, transient 5xx answers and network errors
with jittered exponential backoff, `max_attempts` attempts in all (`legacy` is botocore's older mode).
What we add is counting, through botocore's public `needs-retry` event, which fires once per attempt:
attempts per API operation (the benchmark's "API calls") and attempts AWS refused for rate limiting,
classified by botocore's own throttling detector (the one its adaptive mode uses), so the /metrics
throttle counter (`pluginsdk.observe.provider_throttle`) sees retried throttles too. A failure becomes
`ProviderError` with the cloud's code, the attempts made and a message with any credential material removed.
aiobotocore is imported only when the first client is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pluginsdk import observe
from pluginsdk.errors import ConfigurationError, ProviderError

__all__ = ["RETRY_MODES", "AwsClients", "scrub"]

RETRY_MODES = ("standard", "adaptive", "legacy")
"""botocore's retry modes (`provider.aws.retry_mode`)."""

_KEY_ID = re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,}\b")
_CREDENTIAL = re.compile(r"(Credential=|Signature=|X-Amz-Security-Token=)[^\s,&'\"]+", re.IGNORECASE)


def scrub(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` without access key ids, signatures, tokens or the given secret values."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _KEY_ID.sub("***", text)
    return _CREDENTIAL.sub(lambda m: m.group(1) + "***", text)


class AwsClients:
    """Lazily made ec2/autoscaling clients of one session, and the `call` every request goes through."""

    def __init__(
        self,
        *,
        region: str | None,
        profile: str | None,
        endpoint_url: str | None,
        max_attempts: int,
        timeout: float,
        retry_mode: str = "standard",
        provider: str = "aws",
    ) -> None:
        if retry_mode not in RETRY_MODES:
            raise ConfigurationError(
                f"provider.aws.retry_mode is '{retry_mode}'; botocore's retry modes are {', '.join(RETRY_MODES)}.",
                key="provider.aws.retry_mode",
            )
        self.region = region
        self.profile = profile
        self.endpoint_url = endpoint_url
        self.max_attempts = max(1, max_attempts)
        self.retry_mode = retry_mode
        self.timeout = timeout
        self.provider = provider
        self.calls: Counter[str] = Counter()
        """Attempts per operation name, throttled ones included."""
        self.throttled = 0
        """Attempts AWS refused for rate limiting (retried or not)."""
        self._clients: dict[str, Any] = {}
        self._stack = contextlib.AsyncExitStack()
        self._lock = asyncio.Lock()
        self._secrets: tuple[str, ...] = ()
        self._throttling: Any = None

    async def client(self, service: str) -> Any:
        if service in self._clients:
            return self._clients[service]
        async with self._lock:
            if service not in self._clients:
                self._clients[service] = await self._make(service)
        return self._clients[service]

    async def _make(self, service: str) -> Any:
        try:
            from aiobotocore.config import AioConfig
            from aiobotocore.session import AioSession
            from botocore.retries.standard import RetryEventAdapter, ThrottlingErrorDetector
        except ImportError as exc:  # pragma: no cover - the extra is declared
            raise ProviderError("The aws provider needs aiobotocore: install 'pluginsdk[aws]'.") from exc
        session = await self._session(AioSession)
        config = AioConfig(
            retries={"mode": self.retry_mode, "total_max_attempts": self.max_attempts},
            connect_timeout=self.timeout,
            read_timeout=self.timeout,
            max_pool_connections=50,
        )
        made = session.create_client(service, region_name=self.region, endpoint_url=self.endpoint_url, config=config)
        client = await self._stack.enter_async_context(made)
        self._throttling = ThrottlingErrorDetector(RetryEventAdapter())
        client.meta.events.register("needs-retry", self._attempted)
        return client

    async def _session(self, session_class: Any) -> Any:
        """The session (profile, region) and the secrets to scrub from its errors; ProviderError if none."""
        try:
            session = session_class(profile=self.profile) if self.profile else session_class()
            self.region = self.region or session.get_config_variable("region")
            if not self.region:
                raise ProviderError(
                    "No AWS region: set PLUGIN_REGION, provider.region or AWS_REGION.",
                    details={"provider_code": "NoRegion", "operation": "connect"},
                )
            creds = await session.get_credentials()
        except ProviderError:
            raise
        except Exception as exc:  # ProfileNotFound and friends
            raise ProviderError(
                f"AWS session could not be made: {scrub(str(exc))}",
                details={"provider_code": type(exc).__name__, "operation": "connect"},
            ) from None
        if creds is not None:
            frozen = await creds.get_frozen_credentials()
            self._secrets = tuple(s for s in (frozen.access_key, frozen.secret_key, frozen.token) if s)
        return session

    def _attempted(self, **kwargs: Any) -> None:
        """botocore's `needs-retry` event (once per attempt, before botocore decides): count the attempt and
        its throttling. Returns None: the decision stays botocore's."""
        operation = str(getattr(kwargs.get("operation"), "name", "") or "unknown")
        self.calls[operation] += 1
        if self._throttling is not None and self._throttling.is_throttling_error(**kwargs):
            self.throttled += 1
            hook = observe.provider_throttle
            if hook is not None:
                hook(self.provider, operation)

    async def aclose(self) -> None:
        self._clients.clear()
        await self._stack.aclose()

    async def call(self, service: str, operation: str, **params: Any) -> Any:
        """One AWS operation (`DescribeInstances`), retried by botocore (throttling, transient errors)."""
        client = await self.client(service)
        method = getattr(client, _snake(operation))
        from botocore.exceptions import ClientError

        try:
            return await method(**params)
        except ClientError as exc:
            err: Mapping[str, Any] = exc.response.get("Error", {})
            code = str(err.get("Code") or "Unknown")
            message = scrub(str(err.get("Message") or code), self._secrets)
            raise ProviderError(
                f"AWS {operation} failed: {code}: {message}",
                details={"provider_code": code, "operation": operation, "attempts": _attempts(exc.response)},
            ) from None
        except Exception as exc:  # BotoCoreError (network), unparsable answers (a 500 page)
            text = scrub(str(exc), self._secrets)
            raise ProviderError(
                f"AWS {operation} failed: {type(exc).__name__}: {text[:300]}",
                details={"provider_code": type(exc).__name__, "operation": operation},
            ) from None

    async def paginate(self, service: str, operation: str, key: str, **params: Any) -> list[Any]:
        """Every item under `key` across pages (NextToken), each page one counted call."""
        items: list[Any] = []
        token: str | None = None
        while True:
            extra = {"NextToken": token} if token else {}
            page = await self.call(service, operation, **params, **extra)
            items.extend(page.get(key, []))
            token = page.get("NextToken")
            if not token:
                return items


def _attempts(response: Mapping[str, Any]) -> int:
    """Attempts botocore made for the call that ended in `response` (ResponseMetadata.RetryAttempts + 1)."""
    return int((response.get("ResponseMetadata") or {}).get("RetryAttempts") or 0) + 1


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
