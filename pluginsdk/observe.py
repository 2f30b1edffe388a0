"""Measurement hooks the engine calls, filled in by the server's /metrics (`pluginsdk.server.metrics`).

Plain attributes, None unless a server with metrics runs in this process: the engine pays one `is None`
test per event and the CLI never imports prometheus_client.
"""

from __future__ import annotations

from collections.abc import Callable

statement: Callable[[str, str, float], None] | None = None
"""(dialect, verb, seconds) of one store statement."""
PROVIDER_OPERATIONS = ("launch", "describe", "terminate", "reclaimed")
"""The provider driver calls `provider_call` reports (the `operation` label)."""
provider_call: Callable[[str, str, float, str | None], None] | None = None
"""(provider, operation, seconds, outcome: None | "error") of one provider driver call (launch, describe ...)."""
provider_throttle: Callable[[str, str], None] | None = None
"""(provider, API operation) of one API attempt the cloud refused for rate limiting (retried or not); the
driver reports it, as only it sees the attempts (the aws driver through botocore's `needs-retry` event)."""
authz: Callable[[str, str], None] | None = None
"""(tier: "route" | "object", outcome: "allow" | "deny") of one authorization decision."""
policy_compile: Callable[[float], None] | None = None
"""Seconds one policy compilation took."""
