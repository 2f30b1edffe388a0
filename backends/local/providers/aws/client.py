"""AWS calls with our own backoff, call counting and scrubbed errors.

botocore's retries are switched off (one attempt per call) so that retrying
is ours: throttling is retried with capped, jittered exponential backoff
whose base is a setting (tests use milliseconds), every attempt is counted
(the benchmark's "API calls"), and a failure becomes `ProviderError` with the
cloud's code and a message with any credential material removed.
aiobotocore is imported only when the first client is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pluginsdk.errors import ProviderError

__all__ = ["THROTTLING_CODES", "AwsClients", "scrub"]

log = logging.getLogger("pluginsdk.providers.aws")

THROTTLING_CODES = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "EC2ThrottledException",
        "SlowDown",
        "PriorRequestNotComplete",
    }
)
"""Error codes that mean "slow down": the call was refused before it acted, so retrying is safe."""

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
        base_delay: float,
        max_delay: float,
        timeout: float,
    ) -> None:
        self.region = region
        self.profile = profile
        self.endpoint_url = endpoint_url
        self.max_attempts = max(1, max_attempts)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self.calls: Counter[str] = Counter()
        """Attempts per operation name, throttled ones included."""
        self.throttled = 0
        self._clients: dict[str, Any] = {}
        self._stack = contextlib.AsyncExitStack()
        self._lock = asyncio.Lock()
        self._secrets: tuple[str, ...] = ()

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
        except ImportError as exc:  # pragma: no cover - the extra is declared
            raise ProviderError("The aws provider needs aiobotocore: install 'pluginsdk[aws]'.") from exc
        try:
            session = AioSession(profile=self.profile) if self.profile else AioSession()
            region = self.region or session.get_config_variable("region")
            if not region:
                raise ProviderError(
                    "No AWS region: set PLUGIN_REGION, provider.region or AWS_REGION.",
                    details={"provider_code": "NoRegion", "operation": "connect"},
                )
            self.region = region
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
        config = AioConfig(
            retries={"total_max_attempts": 1},
            connect_timeout=self.timeout,
            read_timeout=self.timeout,
            max_pool_connections=50,
        )
        made = session.create_client(service, region_name=region, endpoint_url=self.endpoint_url, config=config)
        return await self._stack.enter_async_context(made)

    async def aclose(self) -> None:
        self._clients.clear()
        await self._stack.aclose()

    async def call(self, service: str, operation: str, *, idempotent: bool = False, **params: Any) -> Any:
        """One AWS operation (`DescribeInstances`), retried on throttling (and on 5xx/network when idempotent).

        `idempotent`: describes, and launches that carry a ClientToken (AWS answers a repeat with the first result).
        """
        client = await self.client(service)
        method = getattr(client, _snake(operation))
        from botocore.exceptions import ClientError

        attempt = 0
        while True:
            attempt += 1
            self.calls[operation] += 1
            try:
                result: Any = await method(**params)
                return result
            except ClientError as exc:
                err: Mapping[str, Any] = exc.response.get("Error", {})
                code = str(err.get("Code") or "Unknown")
                status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
                retry = code in THROTTLING_CODES or (idempotent and status >= 500)
                if code in THROTTLING_CODES:
                    self.throttled += 1
                if retry and attempt < self.max_attempts:
                    await self._backoff(attempt, operation, code)
                    continue
                message = scrub(str(err.get("Message") or code), self._secrets)
                raise ProviderError(
                    f"AWS {operation} failed: {code}: {message}",
                    details={"provider_code": code, "operation": operation, "attempts": attempt},
                ) from None
            except Exception as exc:  # BotoCoreError (network), unparsable answers (a 500 page)
                if idempotent and attempt < self.max_attempts:
                    await self._backoff(attempt, operation, type(exc).__name__)
                    continue
                text = scrub(str(exc), self._secrets)
                raise ProviderError(
                    f"AWS {operation} failed: {type(exc).__name__}: {text[:300]}",
                    details={"provider_code": type(exc).__name__, "operation": operation, "attempts": attempt},
                ) from None

    async def _backoff(self, attempt: int, operation: str, code: str) -> None:
        delay = min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        log.info("AWS %s: %s, retry %d in %.2fs", operation, code, attempt, delay)
        await asyncio.sleep(delay)

    async def paginate(self, service: str, operation: str, key: str, **params: Any) -> list[Any]:
        """Every item under `key` across pages (NextToken), each page one counted call."""
        items: list[Any] = []
        token: str | None = None
        while True:
            extra = {"NextToken": token} if token else {}
            page = await self.call(service, operation, idempotent=True, **params, **extra)
            items.extend(page.get(key, []))
            token = page.get("NextToken")
            if not token:
                return items


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
